"""browser_session: start, stop or inspect this session's browser (its cookies and tabs)."""

from __future__ import annotations

from typing import Any

from larkbot.context import RequestContext
from tools.base import BaseTool, ToolResult
from tools.browser.memory import browser_pss_bytes
from tools.browser.tooling import BrowserTool, shared_engine
from tools.builtin.browser_tab import tab_list
from tools.runtime import ToolRuntime


class BrowserSessionTool(BrowserTool):
    """browser_session: this session's browser context (separate cookies and storage)."""

    name = "browser_session"
    reading_actions = frozenset({"status", "start"})
    description = (
        "This chat's browser: start opens it (navigate also does), status lists its tabs, stop "
        "closes it and forgets its cookies and logins. It closes by itself when unused."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"action": {"type": "string", "enum": ["start", "stop", "status"]}},
        "required": ["action"],
        "additionalProperties": False,
    }

    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> str | ToolResult:
        """Start, stop or describe the caller's session browser."""
        action = kwargs.get("action")
        if action == "stop":
            stopped = await self.engine.stop(ctx.session_id)
            return (
                "Browser closed; its cookies and tabs are gone."
                if stopped
                else "No browser was open."
            )
        if action == "status" and self.engine.existing(ctx.session_id) is None:
            return "No browser is open in this chat (navigate or start opens one)."
        session = await self.open_session(ctx)
        async with session.lock:
            if action == "start" and not session.tabs:
                await session.open_tab()
            session.touch()
            idle = self._rt.live.get().browser.idle_seconds
            memory = browser_pss_bytes() / 2**20
            return (
                f"Browser: Chromium {self.engine.version}, {len(self.engine.sessions())} "
                f"session(s) open, {memory:.0f} MB in all; this one closes after {idle:g} s "
                "unused.\n" + await tab_list(session)
            )


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """browser_session over the process's shared browser engine."""
    return [BrowserSessionTool(rt, shared_engine(rt))]
