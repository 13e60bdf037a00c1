"""Knowledge tools: search, read, add and edit the owner's Markdown notes."""

from __future__ import annotations

from typing import Any, cast

from larkbot.knowledge import KnowledgeBase, KnowledgeError
from larkbot.knowledge.entries import Mode
from larkbot.logs import get_logger
from tools.base import BaseTool, ToolResult
from tools.runtime import ToolRuntime

log = get_logger(__name__)
_TAGS = {"type": "array", "items": {"type": "string"}, "description": 'e.g. ["python", "async"]'}


class _KnowledgeTool(BaseTool):
    """Shared plumbing: find the service at call time, turn failures into error results."""

    def __init__(self, rt: ToolRuntime, kb: KnowledgeBase) -> None:
        self._rt = rt
        self._fallback = kb

    @property
    def kb(self) -> KnowledgeBase:
        """The shared KnowledgeBase service."""
        kb = self._rt.services.get("knowledge")
        return kb if isinstance(kb, KnowledgeBase) else self._fallback

    async def run(self, **kwargs: Any) -> str | ToolResult:
        """Run `act`, reporting refusals and I/O errors to the model as error results."""
        try:
            return await self.act(**kwargs)
        except KnowledgeError as err:
            return ToolResult(str(err), is_error=True)
        except (OSError, ValueError, TypeError) as err:
            log.warning("knowledge_tool_failed", tool=self.name, exc_info=True)
            return ToolResult(f"{self.name} failed: {err}", is_error=True)

    async def act(self, **kwargs: Any) -> str:
        """The tool's work."""
        raise NotImplementedError


class KnowledgeSearchTool(_KnowledgeTool):
    """knowledge_search: find notes by words (Chinese or English) and meaning."""

    name = "knowledge_search"
    description = (
        "Search the owner's personal knowledge base (notes, runbooks, recipes, reading notes…). "
        "Returns title, tags, a snippet and the `source` path of each match; use knowledge_read "
        "for the full text."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "keywords or a question, any language"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        },
        "required": ["query"],
    }
    private_data = True

    async def act(self, query: str = "", limit: int = 5, **_: Any) -> str:
        """Search and format the hits."""
        if not query.strip():
            raise KnowledgeError("query is empty: pass some keywords")
        results = await self.kb.search(query, int(limit))
        if not results:
            return f"No knowledge entries match {query!r}."
        lines = []
        for i, r in enumerate(results, start=1):
            tags = f"  [tags: {', '.join(r.tags)}]" if r.tags else ""
            lines.append(f"{i}. {r.title}{tags}\n   source: {r.source}\n   {r.snippet}")
        return "\n".join(lines)


class KnowledgeReadTool(_KnowledgeTool):
    """knowledge_read: one entry in full (title, tags, body)."""

    name = "knowledge_read"
    description = (
        "Read one knowledge-base entry in full: title, tags and the whole body. `source` is the "
        "path a knowledge_search result gave (absolute, or relative to the knowledge directory)."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"source": {"type": "string", "description": "the entry's source path"}},
        "required": ["source"],
    }
    private_data = True

    async def act(self, source: str = "", **_: Any) -> str:
        """Read and format one entry."""
        where, note = await self.kb.read(source)
        return (
            f"title: {note.title}\ntags: {', '.join(note.tags)}\ncreated: {note.created}\n"
            f"updated: {note.updated}\nsource: {where}\n\n{note.body}"
        )


class KnowledgeAddTool(_KnowledgeTool):
    """knowledge_add: a new entry (never overwrites an existing one)."""

    name = "knowledge_add"
    description = (
        "Create a new entry in the owner's knowledge base (a note, snippet or reference). "
        "To change an existing entry use knowledge_edit instead. Returns its `source`."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "the Markdown body"},
            "title": {"type": "string", "description": "a short title; Chinese is fine"},
            "tags": _TAGS,
        },
        "required": ["content", "title"],
    }
    side_effect = True

    async def act(self, content: str = "", title: str = "", tags: Any = None, **_: Any) -> str:
        """Write the entry and report where it went."""
        source = await self.kb.add(content, title, tags)
        return f"Added knowledge entry {title!r}. source: {source}"


class KnowledgeEditTool(_KnowledgeTool):
    """knowledge_edit: append to or replace the body of an existing entry."""

    name = "knowledge_edit"
    description = (
        "Edit an existing knowledge entry instead of creating one. mode=append (default) adds "
        "`content` to the end of the body; mode=replace replaces the whole body. Title and tags "
        "stay as they are unless you pass them. Use the `source` from knowledge_search; "
        "knowledge_read it first when unsure of the current text."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "the entry's source path"},
            "content": {"type": "string", "description": "text to append, or the new body"},
            "mode": {"type": "string", "enum": ["append", "replace"], "default": "append"},
            "title": {"type": "string", "description": "a new title (optional)"},
            "tags": {**_TAGS, "description": "new tags, replacing the old ones (optional)"},
        },
        "required": ["source", "content"],
    }
    side_effect = True

    async def act(
        self,
        source: str = "",
        content: str = "",
        mode: str = "append",
        title: str | None = None,
        tags: Any = None,
        **_: Any,
    ) -> str:
        """Apply the edit and confirm it."""
        if mode not in ("append", "replace"):
            raise KnowledgeError(f"mode must be 'append' or 'replace', not {mode!r}")
        where = await self.kb.edit(source, content, cast(Mode, mode), title, tags)
        return f"Updated knowledge entry ({mode}). source: {where}"


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The four knowledge tools sharing one KnowledgeBase (also `rt.services["knowledge"]`)."""
    kb = rt.services.get("knowledge")
    if not isinstance(kb, KnowledgeBase):
        kb = KnowledgeBase.from_settings(rt.settings, rt.http)
        rt.services["knowledge"] = kb
    tools: list[_KnowledgeTool] = [
        KnowledgeSearchTool(rt, kb),
        KnowledgeReadTool(rt, kb),
        KnowledgeAddTool(rt, kb),
        KnowledgeEditTool(rt, kb),
    ]
    return list(tools)
