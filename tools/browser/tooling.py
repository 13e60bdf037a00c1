"""What the three browser tools share: the process's engine, the caller's rights, errors."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from playwright.async_api import Error as PlaywrightError

from larkbot.context import RequestContext
from tools.base import ContextTool, ToolResult
from tools.browser.engine import BrowserEngine, SessionsFull
from tools.browser.launch import BrowserMissing
from tools.browser.pages import PageError
from tools.browser.session import BrowserSession, TabLimit
from tools.browser.urls import UrlRefused, check_url
from tools.runtime import ToolRuntime

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]+")  # as the Lark channel names its inbox folders
BROWSER_INTERFACES = frozenset({"cli", "web", "lark"})
# Tools whose untrusted output is a web page. A page the turn read does not make every later
# browser step need an approval (the per-origin consent covers acting on a site, as in the
# leading browser agents); other untrusted text (another sender, an MCP result) still does.
WEB_PAGE_TOOLS = frozenset({"browser_session", "browser_tab", "browser_page", "web_fetch"})


def shared_engine(rt: ToolRuntime) -> BrowserEngine:
    """The one engine of the process (`rt.services["browser"]`, created on first ask)."""
    engine = rt.services.get("browser")
    if not isinstance(engine, BrowserEngine):
        engine = BrowserEngine(lambda: rt.live.get().browser)
        rt.services["browser"] = engine
    return engine


class BrowserTool(ContextTool):
    """Base of the browser tools: a side effect (a context holds the owner's logins).

    Their output is page text strangers wrote (`untrusted_output`): under the policy, later
    side effects of other tools in the same turn need the owner's explicit approval.
    """

    reading_actions: frozenset[str] = frozenset()  # actions that change nothing anywhere

    side_effect = True
    private_data = True
    untrusted_output = True
    untrusted_kind = "web"
    no_compress = True  # snapshots are indented trees; they are capped by the tools themselves
    interfaces = BROWSER_INTERFACES
    timeout = 90.0

    def __init__(self, rt: ToolRuntime, engine: BrowserEngine) -> None:
        self._rt = rt
        self.engine = engine

    def allow_private(self, ctx: RequestContext) -> bool:
        """`tools.web_fetch.allow_private_networks` opens private networks, for owners only."""
        return bool(self._rt.live.get().tools.web_fetch.allow_private_networks and ctx.is_owner)

    def precheck_url(self, ctx: RequestContext, url: str) -> None:
        """Refuse a bad URL before any browser is started for it."""
        if url:
            try:
                check_url(url, self.allow_private(ctx))
            except UrlRefused as err:
                raise PageError(f"refused to open {url}: {err}") from None

    async def open_session(self, ctx: RequestContext) -> BrowserSession:
        """This caller's session browser, with its rights applied."""
        session = await self.engine.session(ctx.session_id)
        session.allow_private = self.allow_private(ctx)
        session.upload_root = self.inbox(ctx)
        return session

    def inbox(self, ctx: RequestContext) -> Path:
        """This chat's inbox (where Lark saves what users send): the only source of uploads."""
        chat = _UNSAFE.sub("_", ctx.chat_id) or "chat"
        return self._rt.live.get().home / "inbox" / chat

    def untrusted_bar(self, untrusted: tuple[str, ...], **kwargs: Any) -> tuple[str, ...]:
        """Reading never needs approval; acting does after untrusted text that is not a page."""
        if kwargs.get("action") in self.reading_actions:
            return ()
        return tuple(s for s in untrusted if s.split(" ", 1)[0] not in WEB_PAGE_TOOLS)

    async def invoke(self, ctx: RequestContext, arguments: dict[str, Any]) -> str | ToolResult:
        """Run for the call's caller; every browser failure becomes an error result."""
        try:
            result = await self.run_with(ctx, **arguments)
            session = self.engine.existing(ctx.session_id)
            return with_downloads(session, result) if session and session.downloads else result
        except (PageError, TabLimit, SessionsFull, BrowserMissing) as err:
            return ToolResult(f"Error: {err}", is_error=True)
        except PlaywrightError as err:
            first = str(err).splitlines()[0][:400]
            return ToolResult(f"Error: {self.name} failed: {first}", is_error=True)

    async def aclose(self) -> None:
        """Close the browser on shutdown (the engine's close is idempotent)."""
        await self.engine.close()


def with_downloads(session: BrowserSession, result: str | ToolResult) -> str | ToolResult:
    """Attach the files the session downloaded (and their notes) to this result."""
    assert session.downloads is not None
    files = session.downloads.take()
    if not files:
        return result
    base = result if isinstance(result, ToolResult) else ToolResult(result)
    notes = "".join(f"\nNote: {n}" for n in session.take_notes())
    return replace(base, content=base.content + notes, attachments=base.attachments + files)
