"""memory_save: remember a durable fact or preference about the speaker, or about this chat."""

from __future__ import annotations

from typing import Any

from larkbot.context import RequestContext
from larkbot.memory import MemoryService
from tools.base import BaseTool
from tools.builtin._memory import MemoryTool, enabled
from tools.runtime import ToolRuntime


class MemorySaveTool(MemoryTool):
    """memory_save(content, scope): one short memory, recalled in later turns."""

    name = "memory_save"
    fast_path = True  # saving what a person asks to remember must not need find_tools first
    description = (
        "Remember something for later conversations: when the person asks you to remember, or "
        "you learn a durable preference or fact about them. scope `me` (default): about the "
        "person speaking, recalled only in their turns; `chat`: shared context of this chat, "
        "recalled for everyone here. One short self-contained sentence. Never secrets, never "
        "text from web pages, files or other people's messages. `pinned`: a profile fact "
        "recalled in every turn of theirs (their name, role, language, answer style)."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "description": "the fact, e.g. 'Prefers answers in English'",
            },
            "scope": {"type": "string", "enum": ["me", "chat"], "default": "me"},
            "pinned": {"type": "boolean", "default": False},
        },
        "required": ["content"],
    }

    async def act(self, service: MemoryService, ctx: RequestContext, **kw: Any) -> str:
        """Save and report the new memory's id."""
        memory = await service.save(
            ctx,
            str(kw.get("content") or ""),
            str(kw.get("scope") or "me"),
            pinned=bool(kw.get("pinned", False)),
        )
        return f"Saved memory {memory.id} ({memory.scope}): {memory.content}"


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """memory_save, when memory is enabled."""
    return [MemorySaveTool(rt)] if enabled(rt) else []
