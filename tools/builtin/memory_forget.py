"""memory_forget: delete one memory (the speaker's own, or as an owner one of this chat's)."""

from __future__ import annotations

from typing import Any

from larkbot.context import RequestContext
from larkbot.memory import MemoryService
from tools.base import BaseTool
from tools.builtin._memory import MemoryTool, enabled
from tools.runtime import ToolRuntime


class MemoryForgetTool(MemoryTool):
    """memory_forget(memory_id): gone for good, with the versions it replaced."""

    name = "memory_forget"
    description = (
        "Forget one memory by its id (shown in brackets in recalled memories and in "
        "memory_search results), e.g. when the person says it is wrong or asks you to forget."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"memory_id": {"type": "string", "description": "e.g. m1a2b3c4"}},
        "required": ["memory_id"],
    }

    async def act(self, service: MemoryService, ctx: RequestContext, **kw: Any) -> str:
        """Delete and confirm."""
        memory = await service.forget(ctx, str(kw.get("memory_id") or ""))
        return f"Forgot memory {memory.id}: {memory.content}"


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """memory_forget, when memory is enabled."""
    return [MemoryForgetTool(rt)] if enabled(rt) else []
