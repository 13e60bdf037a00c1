"""What every workspace tool shares: the asker's token, one retry on an expired token, errors
in words, Markdown tables and pages that fit the tool output limit.

A workspace tool acts as the person who asks (`acts_as_asker`, read by `larkbot.policy`): the
token is always the sender's own (`tokens.token_for(sender)`), never the owner's or the bot's.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from larkbot.context import RequestContext
from tools.base import ContextTool, ToolResult
from tools.output import MAX_OUTPUT_CHARS
from tools.runtime import ToolRuntime
from tools.workspace.access import MissingScopes, NotAuthorized, WorkspaceAccess, WorkspaceApiError
from tools.workspace.links import OBJ_TYPES, LinkError, Target

PAGE_CHARS = MAX_OUTPUT_CHARS - 600  # room for the header and the "more pages" notice
_EXPIRED = frozenset({99991668, 99991677})
_NO_ACCESS = frozenset({1770032, 91204, 1254302, 131006, 91403, 1310213, 1254304, 99991400403})
_NOT_FOUND = frozenset({1770002, 91402, 131005, 1254040, 1254041, 1254043, 1310214})
AUTH_HINT = "send /auth to authorize"


class WorkspaceError(Exception):
    """A problem the tool explains itself (bad arguments, a field that does not exist)."""


@dataclass
class Session:
    """One tool call's access to Lark as the asker."""

    access: WorkspaceAccess
    open_id: str
    token: str

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]:
        """Lark's `data`; an expired token is refreshed once and the call repeated."""
        for attempt in (1, 2):
            try:
                return await self.access.api.call(
                    method, path, user_token=self.token, params=params, json=json
                )
            except WorkspaceApiError as err:
                if err.code not in _EXPIRED or attempt == 2:
                    raise
                # the one place a refused token is marked (every WorkspaceApi, every caller)
                await self.access.tokens.invalidate(self.open_id, self.token)
                self.token = await self.access.tokens.token_for(self.open_id)
        raise AssertionError("unreachable")

    async def pages(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        key: str = "items",
        limit: int = 100_000,
    ) -> list[Any]:
        """Every item over Lark's paging (`has_more` / `page_token`), up to `limit`."""
        found: list[Any] = []
        query = dict(params or {})
        while True:
            data = await self.call(method, path, params=query, json=json)
            found.extend(data.get(key) or [])
            token = data.get("page_token")
            if not data.get("has_more") or not token or len(found) >= limit:
                return found[:limit]
            query["page_token"] = token


async def resolve(session: Session, target: Target) -> Target:
    """A wiki node → the document, sheet or base it holds (other links unchanged)."""
    if target.kind != "wiki":
        return target
    data = await session.call(
        "GET", "/open-apis/wiki/v2/spaces/get_node", params={"token": target.token}
    )
    node = data.get("node") or {}
    kind = OBJ_TYPES.get(str(node.get("obj_type", "")))
    if kind is None:
        raise WorkspaceError(f"this wiki page holds a {node.get('obj_type')!r}, not readable here")
    return target.resolved(kind, str(node.get("obj_token", "")), str(node.get("title", "")))


def asker_of(ctx: RequestContext, owners: list[str]) -> str:
    """Whose token: the Lark sender; at the terminal or web page, the (first) owner."""
    if ctx.interface == "lark":
        return ctx.sender_id
    return owners[0] if owners else ctx.sender_id


def explain(err: WorkspaceApiError, what: str = "this document") -> str:
    """Lark's error code in words the model can relay."""
    if err.code in _NO_ACCESS or err.status == 403:
        return (
            f"you cannot open {what} with your Lark account (no permission, Lark code "
            f"{err.code}); ask its owner to share it with you"
        )
    if err.code in _NOT_FOUND or err.status == 404:
        return f"{what} was not found (Lark code {err.code}); check the link"
    if err.code == -1:  # no answer (a timeout, no connection): a write may have happened
        return f"Lark did not answer ({err.msg[:200]}); check before repeating a change"
    if err.code == 99991679:
        return f"your Lark authorization lacks a permission this needs; {AUTH_HINT} again"
    if err.code == 99991672:
        return (
            "the bot's Lark app has not enabled a permission this needs (code 99991672); "
            "its admin must enable it in the Lark developer console"
        )
    if err.code in _EXPIRED or err.code == 99991663:
        return f"your Lark authorization has expired; {AUTH_HINT} again"
    return f"Lark refused it (code {err.code}: {err.msg[:200]})"


def md_cell(value: Any) -> str:
    """One Markdown table cell: no pipes or newlines break the row."""
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (every row padded to the header's width)."""
    width = max([len(header), *(len(r) for r in rows)]) if rows or header else 0
    head = [md_cell(h) for h in header] + [""] * (width - len(header))
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * width]
    for row in rows:
        cells = [md_cell(c) for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paginate(text: str, page: int, size: int = PAGE_CHARS) -> tuple[str, int]:
    """Page `page` (1-based) of `text` cut at line ends, and how many pages there are."""
    pages: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = text.rfind("\n", start + size // 2, end)
            end = cut + 1 if cut > 0 else end
        pages.append((start, end))
        start = end
    if not pages:
        return "", 1
    index = min(max(page, 1), len(pages)) - 1
    return text[pages[index][0] : pages[index][1]], len(pages)


class AskerTool(ContextTool):
    """A workspace tool: runs with the asker's own Lark token (see the module docstring)."""

    acts_as_asker = True
    untrusted_output = True  # documents are text no owner wrote
    untrusted_kind = "document"  # a provenance Kind: the approval card names the document
    no_compress = True  # Markdown layout is the content
    user_scopes: tuple[str, ...] = ()  # from larkbot/scopes.py's manifest

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    async def check_before_asking(
        self, ctx: RequestContext, arguments: dict[str, Any]
    ) -> str | None:
        """Before a write's card: not authorized, a bad link or value → the error, no card."""
        result = await self._as_asker(ctx, lambda s: self._checked(s, arguments))
        return result.content if isinstance(result, ToolResult) and result.is_error else None

    async def _checked(self, session: Session, arguments: dict[str, Any]) -> str:
        await self.precheck(session, **arguments)
        return ""

    async def precheck(self, session: Session, **kwargs: Any) -> None:
        """Checks that need Lark (a table's fields) before the asker is asked; raise to stop."""
        return None

    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> str | ToolResult:
        """Get the asker's token, run `work`, and turn every failure into a readable error."""
        return await self._as_asker(ctx, lambda s: self.work(s, **kwargs))

    async def _as_asker(
        self, ctx: RequestContext, job: Callable[[Session], Awaitable[str | ToolResult]]
    ) -> str | ToolResult:
        access = self.rt.services.get("workspace")
        if not isinstance(access, WorkspaceAccess):
            return ToolResult(
                f"Error: {self.name}: Lark workspace access is not set up on this bot", True
            )
        open_id = asker_of(ctx, list(self.rt.settings.owner.open_ids))
        try:
            token = await access.tokens.token_for(open_id)
        except NotAuthorized:
            return ToolResult(
                f"Error: {self.name}: you have not authorized larkbot to use your Lark "
                f"documents, sheets, bases and tasks yet; {AUTH_HINT} (only your own access "
                "is ever used).",
                True,
            )
        session = Session(access, open_id, token)
        try:
            return await job(session)
        except NotAuthorized:
            return ToolResult(f"Error: {self.name}: your authorization ended; {AUTH_HINT}", True)
        except MissingScopes as err:
            names = ", ".join(err.scopes) or "a permission"
            return ToolResult(
                f"Error: {self.name}: your Lark authorization lacks {names}; {AUTH_HINT} "
                "to grant it",
                True,
            )
        except WorkspaceApiError as err:
            return ToolResult(f"Error: {self.name}: {explain(err, self.subject)}", True)
        except (WorkspaceError, LinkError) as err:
            return ToolResult(f"Error: {self.name}: {err}", True)

    subject = "this document"

    @abstractmethod
    async def work(self, session: Session, **kwargs: Any) -> str | ToolResult:
        """Do the call(s) as the asker."""
