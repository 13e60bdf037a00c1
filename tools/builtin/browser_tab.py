"""browser_tab: list, open, switch and close the session's browser tabs (ids t1, t2, …)."""

from __future__ import annotations

from typing import Any

from larkbot.context import RequestContext
from tools.base import BaseTool, ToolResult
from tools.browser.actions import after, goto
from tools.browser.pages import PageError, title_of
from tools.browser.session import BrowserSession
from tools.browser.tooling import BrowserTool, shared_engine
from tools.runtime import ToolRuntime


async def tab_list(session: BrowserSession) -> str:
    """One line per tab, the current one marked."""
    if not session.tabs:
        return "No tabs are open."
    lines = []
    for tab in list(session.tabs.values()):  # a popup may add a tab while a title is awaited
        mark = "*" if tab.id == session.current else " "
        title = (await title_of(tab))[:80]
        lines.append(f"{mark} {tab.id}  {tab.page.url}  {title!r}")
    notes = [f"Note: {n}" for n in session.take_notes()]
    return "\n".join(["Tabs (* = current):", *lines, *notes])


class BrowserTabTool(BrowserTool):
    """browser_tab: the session's tabs; ids are stable and never reused."""

    name = "browser_tab"
    reading_actions = frozenset({"list", "switch"})
    description = (
        "Manage browser tabs: list; open (url?) a new tab and make it current; switch (tab_id) "
        "to another tab; close (tab_id). Tab ids are t1, t2, … and are never reused."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "open", "switch", "close"]},
            "tab_id": {"type": "string", "description": "switch/close: a tab id such as t2"},
            "url": {"type": "string", "description": "open: http(s) URL for the new tab"},
        },
        "required": ["action"],
        "additionalProperties": False,
    }

    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> str | ToolResult:
        """Do one tab action in this caller's session."""
        if kwargs.get("action") == "open":
            self.precheck_url(ctx, str(kwargs.get("url") or "").strip())
        session = await self.open_session(ctx)
        async with session.lock:
            try:
                return await self._act(session, kwargs)
            finally:
                session.touch()

    async def _act(self, session: BrowserSession, kwargs: dict[str, Any]) -> str:
        action = kwargs.get("action")
        if action == "list":
            return await tab_list(session)
        if action == "open":
            tab = await session.open_tab()
            url = str(kwargs.get("url") or "").strip()
            done = await goto(self.engine, session, tab, url) if url else "Opened a blank tab"
            return await after(self.engine, session, tab, f"{done} in new tab {tab.id}", kwargs)
        tab_id = str(kwargs.get("tab_id") or "").strip()
        if tab_id not in session.tabs:
            known = ", ".join(session.tabs) or "none"
            raise PageError(f"no tab {tab_id!r} (open tabs: {known})")
        if action == "close":
            await session.close_tab(tab_id)
            return f"Closed {tab_id}.\n{await tab_list(session)}"
        session.current = tab_id
        return await after(self.engine, session, session.tabs[tab_id], f"Switched to {tab_id}", {})


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """browser_tab over the process's shared browser engine."""
    return [BrowserTabTool(rt, shared_engine(rt))]
