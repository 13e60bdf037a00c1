"""What the three browser tools share: the process's engine, the caller's rights, errors."""

from __future__ import annotations

import re
from abc import abstractmethod
from pathlib import Path
from typing import Any

from playwright.async_api import Error as PlaywrightError

from larkbot.context import RequestContext, get_context
from tools.base import BaseTool, ToolResult
from tools.browser.engine import BrowserEngine, SessionsFull
from tools.browser.launch import BrowserMissing
from tools.browser.pages import PageError
from tools.browser.session import BrowserSession, TabLimit
from tools.browser.urls import UrlRefused, check_url
from tools.runtime import ToolRuntime

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]+")  # as larkbot.lark.media_in names inbox folders
BROWSER_INTERFACES = frozenset({"cli", "web", "lark"})


def shared_engine(rt: ToolRuntime) -> BrowserEngine:
    """The one engine of the process (`rt.services["browser"]`, created on first ask)."""
    engine = rt.services.get("browser")
    if not isinstance(engine, BrowserEngine):
        engine = BrowserEngine(lambda: rt.live.get().browser)
        rt.services["browser"] = engine
    return engine


class BrowserTool(BaseTool):
    """Base of the browser tools: a side effect (a context holds the owner's logins)."""

    side_effect = True
    private_data = True
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

    async def run(self, **kwargs: Any) -> str | ToolResult:
        """Run for the current request's caller; every failure becomes an error result."""
        ctx = get_context()
        try:
            return await self.run_with(ctx, **kwargs)
        except (PageError, TabLimit, SessionsFull, BrowserMissing) as err:
            return ToolResult(f"Error: {err}", is_error=True)
        except PlaywrightError as err:
            first = str(err).splitlines()[0][:400]
            return ToolResult(f"Error: {self.name} failed: {first}", is_error=True)

    @abstractmethod
    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> str | ToolResult:
        """Do the work for the caller described by `ctx`."""

    async def aclose(self) -> None:
        """Close the browser on shutdown (the engine's close is idempotent)."""
        await self.engine.close()
