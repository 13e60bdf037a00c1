"""memory_search: look through the speaker's own memories and this chat's."""

from __future__ import annotations

from typing import Any

from larkbot.context import RequestContext
from larkbot.memory import MemoryRefused, MemoryService
from larkbot.memory.recall import label, untrusted_source
from larkbot.sources import Kind, Source
from tools.base import BaseTool, ToolResult
from tools.builtin._memory import MemoryTool, enabled
from tools.runtime import ToolRuntime


class MemorySearchTool(MemoryTool):
    """memory_search(query): memories matching words (Chinese or English), with their ids."""

    name = "memory_search"
    description = (
        "Search long-term memory (the speaker's own and this chat's) by keywords, beyond what "
        "was recalled automatically. Returns ids usable with memory_forget."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"query": {"type": "string", "description": "keywords, any language"}},
        "required": ["query"],
    }

    async def act(self, service: MemoryService, ctx: RequestContext, **kw: Any) -> str | ToolResult:
        """Search and list the matches, naming the untrusted ones as the result's sources."""
        query = str(kw.get("query") or "").strip()
        if not query:
            raise MemoryRefused("query is empty: pass some keywords")
        found = await service.search(ctx, query)
        if not found:
            return f"No memories match {query!r}."
        person = service.person(ctx)
        text = "\n".join(label(m, person) for m in found)
        # The same bar as recall into the prompt: a found memory a non-owner wrote, or one
        # saved while untrusted text was in the turn, makes this turn's side effects ask.
        untrusted = tuple(Source(Kind.MEMORY, untrusted_source(m)) for m in found if not m.trusted)
        return ToolResult(text, sources=untrusted)


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """memory_search, when memory is enabled."""
    return [MemorySearchTool(rt)] if enabled(rt) else []
