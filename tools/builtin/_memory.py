"""Shared plumbing of the memory_* tools: the service at call time, failures as results."""

from __future__ import annotations

from typing import Any

from larkbot.context import RequestContext
from larkbot.memory import MemoryRefused, MemoryService
from tools.base import ContextTool, ToolResult
from tools.runtime import ToolRuntime


class MemoryTool(ContextTool):
    """A memory tool: finds `rt.services["memory"]` when called (set by the core)."""

    private_to_caller = True  # one person's memories never reach another's turn via history

    def __init__(self, rt: ToolRuntime) -> None:
        self._rt = rt

    async def run_with(self, ctx: RequestContext, **kw: Any) -> str | ToolResult:
        """Run `act` with the service; refusals and limits come back as error results."""
        service = self._rt.services.get("memory")
        if not isinstance(service, MemoryService):
            return ToolResult("memory is off here (memory.enabled: false)", is_error=True)
        try:
            return await self.act(service, ctx, **kw)
        except MemoryRefused as err:
            return ToolResult(str(err), is_error=True)

    async def act(self, service: MemoryService, ctx: RequestContext, **kw: Any) -> str | ToolResult:
        """The tool's work."""
        raise NotImplementedError


def enabled(rt: ToolRuntime) -> bool:
    """Whether the memory tools are offered at all."""
    return rt.settings.memory.enabled
