"""Documents: read any link as Markdown (paged), search, create, append (Markdown → blocks)."""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from typing import Any

from tools.base import ToolResult
from tools.runtime import ToolRuntime
from tools.workspace.bitable import read_table
from tools.workspace.common import AskerTool, Session, WorkspaceError, paginate, resolve
from tools.workspace.links import Target, parse
from tools.workspace.sheets import read_range

DOCX = "/open-apis/docx/v1/documents"
CACHE_SECONDS = 120.0  # later pages of one person's read come from here, not a new export
CACHE_CHARS = 8 * 1024 * 1024
MAX_DESCENDANTS = 1000  # blocks per descendant call; larger Markdown is written in parts
_HIGHLIGHT = re.compile(r"</?h>")


async def write_markdown(session: Session, document_id: str, markdown: str) -> int:
    """Markdown → Lark's own blocks (convert), appended at the end (descendant); block count."""
    data = await session.call(
        "POST",
        f"{DOCX}/blocks/convert",
        json={"content_type": "markdown", "content": markdown},
    )
    blocks: list[dict[str, Any]] = list(data.get("blocks") or [])
    for block in blocks:  # read-only on insert (Lark rejects tables that carry it)
        prop = (block.get("table") or {}).get("property")
        if isinstance(prop, dict):
            prop.pop("merge_info", None)
    first = list(data.get("first_level_block_ids") or [])
    children = _subtrees(blocks)
    part: list[str] = []
    size = 0
    for block_id in [*first, None]:
        count = len(children.get(block_id, [])) if block_id else 0
        if part and (block_id is None or size + count > MAX_DESCENDANTS):
            ids = {b for top in part for b in children.get(top, [top])}
            await session.call(
                "POST",
                f"{DOCX}/{document_id}/blocks/{document_id}/descendant",
                params={"document_revision_id": -1},
                json={
                    "children_id": part,
                    "index": -1,
                    "descendants": [b for b in blocks if b.get("block_id") in ids],
                },
            )
            part, size = [], 0
        if block_id is not None:
            part.append(block_id)
            size += count
    return len(blocks)


def _subtrees(blocks: list[dict[str, Any]]) -> dict[str | None, list[str]]:
    """Each block id → itself and every block under it."""
    by_id = {str(b.get("block_id")): b for b in blocks}
    out: dict[str | None, list[str]] = {}
    for block_id in by_id:
        seen, stack = [], [block_id]
        while stack:
            current = stack.pop()
            if current in by_id and current not in seen:
                seen.append(current)
                stack.extend(str(c) for c in by_id[current].get("children") or [])
        out[block_id] = seen
    return out


def doc_url(domain: str, document_id: str) -> str:
    """A link to a document on the configured brand."""
    host = "larksuite.com" if "larksuite" in domain else "feishu.cn"
    return f"https://www.{host}/docx/{document_id}"


class TextCache:
    """Recent reads by (person, link): page 2 of a long document costs no Lark call.

    Keyed by the asker, so one person's read never answers another's.
    """

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, str], tuple[float, Target, str]] = OrderedDict()

    def get(self, key: tuple[str, str]) -> tuple[Target, str] | None:
        """A fresh entry, or None."""
        item = self._items.get(key)
        if item is None or time.monotonic() - item[0] > CACHE_SECONDS:
            self._items.pop(key, None)
            return None
        return item[1], item[2]

    def put(self, key: tuple[str, str], target: Target, text: str) -> None:
        """Keep it; the oldest go past CACHE_CHARS."""
        self._items[key] = (time.monotonic(), target, text)
        self._items.move_to_end(key)
        while sum(len(t) for _, _, t in self._items.values()) > CACHE_CHARS and self._items:
            self._items.popitem(last=False)


class DocRead(AskerTool):
    """`lark_doc_read(url, page)`: any pasted link or token, as Markdown, paged."""

    name = "lark_doc_read"
    description = (
        "Read a Lark/Feishu document, wiki page, sheet or base the user links to (docx, wiki, "
        "sheets, base links or a bare token), as Markdown, with the user's own Lark access. "
        "Long documents come in pages: pass page=2, 3, … for the rest."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "the link (or token) as pasted"},
            "page": {"type": "integer", "minimum": 1, "description": "page of a long document"},
        },
        "required": ["url"],
    }
    user_scopes = (
        "docx:document:readonly",
        "docs:document.content:read",
        "wiki:node:read",
        "docs:doc:readonly",  # the legacy doc API takes none of the docx scopes
    )

    def __init__(self, rt: ToolRuntime) -> None:
        super().__init__(rt)
        self.cache = TextCache()

    async def work(self, session: Session, **kwargs: Any) -> str | ToolResult:
        """Resolve the link, fetch the Markdown (page 1 fetches again), return the page."""
        url, page = str(kwargs.get("url", "")), int(kwargs.get("page") or 1)
        key = (session.open_id, url.strip())
        cached = self.cache.get(key) if page > 1 else None
        target, text = cached or await self._fetch(session, url)
        self.cache.put(key, target, text)
        body, total = paginate(text, page)
        title = f"# {target.title}\n\n" if target.title and page == 1 else ""
        head = f"[Lark {target.kind} {target.token}, page {min(page, total)} of {total}]\n"
        tail = ""
        if page < total:
            more = total - page
            tail = (
                f"\n\n[{more} more page{'s' if more > 1 else ''}: call lark_doc_read with this "
                f"url and page={page + 1}]"
            )
        return head + title + body + tail

    async def _fetch(self, session: Session, url: str) -> tuple[Target, str]:
        target = await resolve(session, parse(url))
        if target.kind in ("sheet", "bitable"):
            reader = read_range if target.kind == "sheet" else read_table
            text = await reader(session, target, self.rt)
        elif target.kind == "docx":
            data = await session.call(
                "GET",
                "/open-apis/docs/v1/content",
                params={"doc_token": target.token, "doc_type": "docx", "content_type": "markdown"},
            )
            text = str(data.get("content") or "")
        elif target.kind == "doc":
            data = await session.call("GET", f"/open-apis/doc/v2/{target.token}/raw_content")
            text = str(data.get("content") or "")
        else:
            raise WorkspaceError(f"a {target.kind} link has no text to read")
        return target, text


class DocSearch(AskerTool):
    """`lark_doc_search(query)`: the documents and wiki pages the asker can see."""

    name = "lark_doc_search"
    description = (
        "Search the Lark/Feishu documents, wiki pages, sheets and bases the user can open "
        "(titles and text), with the user's own Lark access."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"query": {"type": "string", "description": "words to look for"}},
        "required": ["query"],
    }
    user_scopes = ("search:docs:read",)
    subject = "the search"

    async def work(self, session: Session, **kwargs: Any) -> str:
        """One search page (Lark caps the query at 30 characters)."""
        query = str(kwargs.get("query", "")).strip()[:30]
        if not query:
            raise WorkspaceError("give some words to search for")
        data = await session.call(
            "POST",
            "/open-apis/search/v2/doc_wiki/search",
            json={"query": query, "page_size": 20, "doc_filter": {}, "wiki_filter": {}},
        )
        units = data.get("res_units") or []
        if not units:
            return f"No document you can open matches {query!r}."
        lines = [f"{len(units)} of {data.get('total', len(units))} results for {query!r}:"]
        for unit in units:
            meta = unit.get("result_meta") or {}
            title = _HIGHLIGHT.sub("", str(unit.get("title_highlighted") or "(untitled)"))
            summary = _HIGHLIGHT.sub("", str(unit.get("summary_highlighted") or ""))[:200]
            kind = unit.get("entity_type") or meta.get("doc_types") or ""
            owner = f", owner {meta['owner_name']}" if meta.get("owner_name") else ""
            lines.append(f"- {title} ({kind}{owner}) {meta.get('url', '')}")
            if summary:
                lines.append(f"  {summary}")
        return "\n".join(lines)


class DocCreate(AskerTool):
    """`lark_doc_create(title, content, folder)`: a new document written as real blocks."""

    name = "lark_doc_create"
    description = (
        "Create a Lark/Feishu document owned by the user, with Markdown content written as "
        "real document blocks (headings, lists, tables, code). The user confirms on a card."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "content": {"type": "string", "description": "Markdown"},
            "folder": {"type": "string", "description": "folder link or token; empty: My Space"},
        },
        "required": ["title", "content"],
    }
    untrusted_output = False  # it returns only the new document's link
    user_scopes = ("docx:document:create", "docx:document:write_only")

    def consent_check(self, **kwargs: Any) -> str | None:
        """Every creation is confirmed by the asker, with the full text shown."""
        where = kwargs.get("folder") or "your My Space"
        return (
            f"create the document “{kwargs.get('title', '')}” in {where} with this content:\n"
            f"{str(kwargs.get('content', ''))[:3000]}"
        )

    def consent_always(self, **kwargs: Any) -> bool:
        """Each write is confirmed on its own."""
        return True

    async def work(self, session: Session, **kwargs: Any) -> str:
        """Create, then write the blocks."""
        folder = str(kwargs.get("folder") or "").strip()
        token = parse(folder, default="folder").token if folder else ""
        data = await session.call(
            "POST", DOCX, json={"title": str(kwargs.get("title", "")), "folder_token": token}
        )
        document_id = str((data.get("document") or {}).get("document_id", ""))
        blocks = await write_markdown(session, document_id, str(kwargs.get("content", "")))
        url = doc_url(self.rt.settings.lark.domain, document_id)
        return f"Created the document {url} ({blocks} blocks)."


class DocAppend(AskerTool):
    """`lark_doc_append(url, content)`: Markdown added at the end of a document, as blocks."""

    name = "lark_doc_append"
    description = (
        "Append Markdown to the end of a Lark/Feishu document (docx or a wiki page holding "
        "one) as real blocks, with the user's own access. The user confirms on a card."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "content": {"type": "string", "description": "Markdown"},
        },
        "required": ["url", "content"],
    }
    untrusted_output = False
    user_scopes = ("docx:document:write_only", "wiki:node:read")

    def consent_check(self, **kwargs: Any) -> str | None:
        """The exact text to append."""
        return f"append to {kwargs.get('url', '')}:\n{str(kwargs.get('content', ''))[:3000]}"

    def consent_always(self, **kwargs: Any) -> bool:
        """Each write is confirmed on its own."""
        return True

    async def work(self, session: Session, **kwargs: Any) -> str:
        """Resolve, then write the blocks at the end."""
        target = await resolve(session, parse(str(kwargs.get("url", ""))))
        if target.kind != "docx":
            raise WorkspaceError(f"only documents (docx) can be appended to, not a {target.kind}")
        blocks = await write_markdown(session, target.token, str(kwargs.get("content", "")))
        return f"Appended {blocks} blocks to the document {target.token}."
