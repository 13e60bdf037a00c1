"""browser_page: act on and read the session's browser tab (snapshot refs, not pixels)."""

from __future__ import annotations

from typing import Any

from larkbot.context import RequestContext
from tools.base import BaseTool, ToolResult
from tools.browser.actions import ACTIONS
from tools.browser.pages import describe_owner
from tools.browser.snapshot import parse_ref
from tools.browser.tooling import BrowserTool, shared_engine
from tools.browser.urls import origin_of
from tools.runtime import ToolRuntime

ACTING = frozenset({"click", "type", "select", "press", "upload"})
READING = frozenset({"snapshot", "find", "read_text", "screenshot", "wait", "scroll"})


class BrowserPageTool(BrowserTool):
    """browser_page: navigate, snapshot, find, click, type, select, press, scroll, wait, read."""

    name = "browser_page"
    reading_actions = READING
    description = (
        "Drive a real Chromium tab (JavaScript pages, clicking, forms, logged-in sites; use "
        "web_fetch for plain pages). navigate(url) opens a page; snapshot(interactive_only?, "
        "depth?) returns the accessibility tree with refs like s4e12; click(ref, element), "
        "type(ref, text, submit?), select(ref, values), press(key, ref?) act on an element by ref "
        "(element: a short description such as 'Submit order button'); scroll(dy), "
        "wait(text | seconds ≤ 30), back; find(text) lists matching elements; read_text(ref?) "
        "returns visible text; screenshot(full_page?) sends the user an image; upload(ref, paths) "
        "puts files the user sent in this chat into a file input. Acting actions "
        "return the url and a fresh snapshot: only refs of the latest snapshot work."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": sorted(ACTIONS)},
            "url": {"type": "string", "description": "navigate: http(s) URL"},
            "ref": {"type": "string", "description": "element ref from the latest snapshot"},
            "element": {"type": "string", "description": "what the element is, for consent"},
            "text": {"type": "string", "description": "type: text to enter; find/wait: text"},
            "submit": {"type": "boolean", "description": "type: press Enter afterwards"},
            "values": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
            "key": {"type": "string", "description": "press: Enter, Escape, Control+A …"},
            "dy": {"type": "integer", "description": "scroll: pixels down (negative: up)"},
            "seconds": {"type": "number", "minimum": 0, "maximum": 30},
            "interactive_only": {"type": "boolean", "description": "snapshot: flat list"},
            "depth": {"type": "integer", "minimum": 1, "maximum": 50},
            "full_page": {"type": "boolean", "description": "screenshot: the whole page"},
            "paths": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": 10,
                "description": "upload: files this chat sent (from its inbox)",
            },
        },
        "required": ["action"],
        "additionalProperties": False,
    }

    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> str | ToolResult:
        """Run one action in this caller's session (one call at a time per session)."""
        action = ACTIONS.get(str(kwargs.get("action")))
        if action is None:
            return ToolResult(f"Error: unknown action; use one of {sorted(ACTIONS)}", True)
        if kwargs.get("action") == "navigate":
            self.precheck_url(ctx, str(kwargs.get("url") or "").strip())
        session = await self.open_session(ctx)
        async with session.lock:
            try:
                return await action(self.engine, session, kwargs)
            finally:
                session.touch()

    def _target(self, kwargs: dict[str, Any]) -> tuple[str, str]:
        """(element description, page origin) of the ref an acting call names."""
        parsed = parse_ref(str(kwargs.get("ref") or ""))
        element = str(kwargs.get("element") or "").strip()[:120]
        if parsed is None:
            return element or "the focused element", "the current page"
        owner = self.engine.snapshot_owner(parsed[0])
        label = describe_owner(owner, parsed[1])
        shown = f"{label} ({element})" if element and element not in label else label
        return shown, origin_of(owner.url) if owner else "the current page"

    def consent_check(self, **kwargs: Any) -> str | None:
        """What will be done on which site, for clicks, typing, selecting and key presses."""
        action = kwargs.get("action")
        if action not in ACTING:
            return None  # reading and navigating are like web_fetch: no consent
        element, site = self._target(kwargs)
        if action == "click":
            return f"Click {element} on {site}"
        if action == "type":
            typed = str(kwargs.get("text") or "")[:80]
            submit = " and press Enter" if kwargs.get("submit") else ""
            return f"Type {typed!r} into {element} on {site}{submit}"
        if action == "select":
            return f"Select {kwargs.get('values')} in {element} on {site}"
        if action == "upload":
            names = ", ".join(str(p) for p in kwargs.get("paths") or [])
            return f"Upload {names} through {element} on {site}"
        return f"Press {kwargs.get('key')} on {element} on {site}"

    def consent_always(self, **kwargs: Any) -> bool:
        """Uploading the user's files to a site is asked every time."""
        return kwargs.get("action") == "upload"

    def consent_scope(self, **kwargs: Any) -> str:
        """The page's origin: a grant covers acting on that site for the session."""
        parsed = parse_ref(str(kwargs.get("ref") or ""))
        owner = self.engine.snapshot_owner(parsed[0]) if parsed else None
        return origin_of(owner.url) if owner else f"{self.name}:{kwargs.get('action')}"


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """browser_page over the process's shared browser engine."""
    return [BrowserPageTool(rt, shared_engine(rt))]
