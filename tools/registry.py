"""The tool registry: which tools exist and which interface sees which.

It knows no tool itself: the wiring (`larkbot/runtime_factory.py`) registers the built-ins,
plugins (`tools/plugins.py`) and MCP tools (`tools/mcp.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from larkbot.logs import get_logger
from tools.base import BaseTool

log = get_logger(__name__)


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

    @staticmethod
    def openai_tools(tools: Iterable[BaseTool]) -> list[dict[str, Any]]:
        """The given tools in the OpenAI Chat Completions `tools` format."""
        return [t.openai_schema() for t in tools]
