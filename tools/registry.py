"""The tool registry: which tools exist, which interface sees which, and how they are loaded."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from larkbot.logs import get_logger
from tools.base import BaseTool
from tools.runtime import ToolRuntime

log = get_logger(__name__)

ENTRY_POINT_GROUP = "larkbot.tools"


class ToolRegistry:
    """Tools by name; scopes per interface follow the design doc's registration table."""

    def __init__(self) -> None:
        self._tools: dict[str, BaseTool] = {}

    def register(self, tool: BaseTool) -> None:
        """Add (or replace) a tool; a later registration of the same name wins, with a warning."""
        if not getattr(tool, "name", ""):
            raise ValueError(f"{type(tool).__name__} has no name")
        if tool.name in self._tools and self._tools[tool.name] is not tool:
            log.warning("tool_replaced", tool=tool.name)
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        """Remove a tool if present."""
        self._tools.pop(name, None)

    def get(self, name: str) -> BaseTool | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    def all(self) -> list[BaseTool]:
        """Every tool, sorted by name (a stable order keeps prompts cache-friendly)."""
        return [self._tools[n] for n in sorted(self._tools)]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def for_interface(self, interface: str) -> list[BaseTool]:
        """Tools registered for `interface` ("cli", "web", "lark"; "fast" = fast-path tools)."""
        if interface == "fast":
            return [t for t in self.all() if t.fast_path]
        return [t for t in self.all() if interface in t.interfaces]

    def fast_path_tools(self, interface: str) -> list[BaseTool]:
        """Tools of `interface` advertised in the short fast-path prompt."""
        return [t for t in self.for_interface(interface) if t.fast_path]

    @staticmethod
    def openai_tools(tools: Iterable[BaseTool]) -> list[dict[str, Any]]:
        """The given tools in the OpenAI Chat Completions `tools` format."""
        return [t.openai_schema() for t in tools]


def _accept(registry: ToolRegistry, rt: ToolRuntime, tools: Iterable[Any], origin: str) -> int:
    disabled = set(rt.settings.tools.disabled)
    count = 0
    for tool in tools:
        if not isinstance(tool, BaseTool):
            log.warning("tool_rejected", origin=origin, reason=f"{tool!r} is not a BaseTool")
            continue
        if tool.name in disabled:
            log.info("tool_disabled", tool=tool.name)
            continue
        registry.register(tool)
        count += 1
    return count


def load_builtin_tools(registry: ToolRegistry, rt: ToolRuntime) -> int:
    """Import each non-underscore tools.builtin module; register what its `provide(rt)` returns."""
    import tools.builtin as pkg

    count = 0
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        origin = f"tools.builtin.{info.name}"
        try:
            module = importlib.import_module(origin)
            provide = getattr(module, "provide", None)
            if provide is None:
                log.warning("tool_module_without_provide", module=origin)
                continue
            count += _accept(registry, rt, provide(rt), origin)
        except Exception:  # one broken tool must not take the others down
            log.error("tool_module_failed", module=origin, exc_info=True)
    return count


def _tools_of_module(module: ModuleType, rt: ToolRuntime) -> list[Any]:
    provide = getattr(module, "provide", None)
    if callable(provide):
        return list(provide(rt))
    found: list[Any] = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        ours = obj.__module__ == module.__name__
        if ours and issubclass(obj, BaseTool) and not inspect.isabstract(obj):
            try:
                found.append(obj())
            except Exception:  # e.g. a constructor that needs arguments: skip this class only
                log.error("plugin_tool_failed", tool=obj.__name__, exc_info=True)
    return found


def _load_plugin_file(path: Path) -> ModuleType:
    name = f"larkbot_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_plugins(registry: ToolRegistry, rt: ToolRuntime) -> int:
    """Register tools from $LARKBOT_HOME/tools/*.py and the `larkbot.tools` entry points.

    A plugin file either defines BaseTool subclasses with no-argument constructors or a
    `provide(rt)` function; an entry point names such a module, a BaseTool subclass or a
    `provide`-like callable. A broken plugin is logged and skipped.
    """
    count = 0
    plugin_dir = rt.home / "tools"
    files = sorted(plugin_dir.glob("*.py")) if plugin_dir.is_dir() else []
    for path in files:
        if path.name.startswith("_"):
            continue
        try:
            count += _accept(registry, rt, _tools_of_module(_load_plugin_file(path), rt), str(path))
        except Exception:
            log.error("plugin_failed", plugin=str(path), exc_info=True)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            count += _accept(registry, rt, _tools_of_entry_point(ep.load(), rt), ep.name)
        except Exception:
            log.error("plugin_failed", plugin=f"entry point {ep.name}", exc_info=True)
    return count


def _tools_of_entry_point(obj: Any, rt: ToolRuntime) -> list[Any]:
    if isinstance(obj, ModuleType):
        return _tools_of_module(obj, rt)
    if inspect.isclass(obj) and issubclass(obj, BaseTool):
        return [obj()]
    if callable(obj):
        return list(obj(rt))
    raise TypeError(f"entry point gave {obj!r}: expected a module, a BaseTool class or provide(rt)")
