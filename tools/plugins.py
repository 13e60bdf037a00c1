"""Loading tools: a package's modules, plugins ($LARKBOT_HOME/tools/*.py, entry points).

Every tool arrives as a BaseTool; which package holds the built-ins is the composition
root's to say (`larkbot/runtime_factory.py` hands in `tools.builtin`).

Plugins are owner-only by default: a plugin tool is wrapped in `PluginTool`, which counts it
as having side effects unless its class declares `side_effect = False`, and as private data
always, so nobody but an owner can call it until `owner.share` opens it (and a side effect
never opens). A file planted in `tools/` cannot make itself public by what it claims.
"""

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
from typing import TYPE_CHECKING, Any

from larkbot.logs import get_logger
from tools.base import BaseTool, ToolResult
from tools.registry import ToolRegistry
from tools.runtime import ToolRuntime

if TYPE_CHECKING:
    from larkbot.context import RequestContext

log = get_logger("tools.plugins")

ENTRY_POINT_GROUP = "larkbot.tools"


def _declares(tool: BaseTool, attribute: str) -> bool:
    """True when the tool's own class (not BaseTool) or instance sets `attribute`."""
    if attribute in vars(tool):
        return True
    return any(attribute in vars(cls) for cls in type(tool).__mro__ if cls is not BaseTool)


class PluginTool(BaseTool):
    """A plugin's tool as the policy sees it: side effects unless declared, private always."""

    def __init__(self, inner: BaseTool, origin: str) -> None:
        self.inner, self.origin = inner, origin
        self.name, self.description = inner.name, inner.description
        self.parameters = inner.parameters
        self.fast_path, self.no_compress = inner.fast_path, inner.no_compress
        self.interfaces, self.timeout = inner.interfaces, inner.timeout
        self.side_effect = inner.side_effect if _declares(inner, "side_effect") else True
        self.private_data = True  # others only through owner.share
        self.untrusted_output = inner.untrusted_output
        self.untrusted_kind = inner.untrusted_kind
        # only makes the bot stricter: its results hidden from other people's turns
        self.private_to_caller = inner.private_to_caller
        # acts_as_asker is not forwarded: it would put a plugin under `workspace.members`

    async def check_before_asking(
        self, ctx: RequestContext, arguments: dict[str, Any]
    ) -> str | None:
        """The plugin's own pre-check (it can only stop a call before anyone is asked)."""
        return await self.inner.check_before_asking(ctx, arguments)

    def consent_check(self, **kwargs: Any) -> str | None:
        """The plugin's own consent hook."""
        return self.inner.consent_check(**kwargs)

    def consent_scope(self, **kwargs: Any) -> str:
        """The plugin's own scope."""
        return self.inner.consent_scope(**kwargs)

    def consent_always(self, **kwargs: Any) -> bool:
        """The plugin's own `always`."""
        return self.inner.consent_always(**kwargs)

    def share_check(self, ctx: RequestContext, **kwargs: Any) -> str | None:
        """The plugin's own sharing hook."""
        return self.inner.share_check(ctx, **kwargs)

    def touched_paths(self, **kwargs: Any) -> list[str]:
        """The plugin's own declared paths."""
        return self.inner.touched_paths(**kwargs)

    async def run(self, **kwargs: Any) -> str | ToolResult:
        """The plugin's `run` (the design doc's `async def run(self, **kwargs) -> str`)."""
        return await self.inner.run(**kwargs)

    async def invoke(self, ctx: RequestContext, arguments: dict[str, Any]) -> str | ToolResult:
        """The plugin's own `invoke` (a ContextTool plugin gets its context)."""
        return await self.inner.invoke(ctx, arguments)


def accept(registry: ToolRegistry, rt: ToolRuntime, tools: Iterable[Any], origin: str) -> int:
    """Register the BaseTools among `tools` that `tools.disabled` does not switch off."""
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


def load_package_tools(registry: ToolRegistry, rt: ToolRuntime, package: ModuleType) -> int:
    """Import each non-underscore module of `package`; register what its `provide(rt)` returns.

    The composition root hands in `tools.builtin`; this module names no tool package itself.
    """
    count = 0
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        origin = f"{package.__name__}.{info.name}"
        try:
            module = importlib.import_module(origin)
            provide = getattr(module, "provide", None)
            if provide is None:
                log.warning("tool_module_without_provide", module=origin)
                continue
            count += accept(registry, rt, provide(rt), origin)
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


def _wrapped(tools: Iterable[Any], origin: str) -> list[Any]:
    return [PluginTool(t, origin) if isinstance(t, BaseTool) else t for t in tools]


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
            found = _tools_of_module(_load_plugin_file(path), rt)
            count += accept(registry, rt, _wrapped(found, str(path)), str(path))
        except Exception:
            log.error("plugin_failed", plugin=str(path), exc_info=True)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = _tools_of_entry_point(ep.load(), rt)
            count += accept(registry, rt, _wrapped(found, ep.name), ep.name)
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
