"""computer_use: see and operate an X desktop (screenshots, mouse, keyboard) — Web and Lark only.

The vocabulary of Anthropic's and OpenAI's computer tools. Each call runs alone (one desktop, one
pointer), then, after a short settle delay, returns a screenshot as an image attachment and a
line saying what was done, the screen size and where the cursor is. Absent unless
`computer_use.enabled: true`; a side effect (owners only in Lark), asked once per session, and
every time for `type`/`key` (keys typed into an unknown window can do anything).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import Any

from tools.base import Attachment, BaseTool, ToolResult
from tools.desktop import actions as act
from tools.desktop.geometry import Geometry, OutOfBounds
from tools.desktop.pointer import pointer_position
from tools.desktop.screen import capture, screen_geometry
from tools.desktop.xinput import Clipboard, DesktopError, X11Display, typeable
from tools.desktop.xinput import xdotool as run_xdotool
from tools.runtime import ToolRuntime

ACTIONS = (
    "screenshot", "click", "double_click", "right_click", "move", "drag", "scroll",
    "type", "key", "wait", "cursor_position",
)  # fmt: skip
MAX_WAIT = 10.0
KEEP_SCREENSHOTS = 50  # newest files kept in $LARKBOT_HOME/screenshots (delivery reads them later)
DISPLAY_NAME = re.compile(r"^[A-Za-z0-9.\-]*:\d{1,5}(\.\d{1,3})?$")
_INT = {"type": "integer"}
_X = "Screenshot x (click, move, scroll; clicks default to the cursor)."
_PATH = (
    "drag: 2-32 points [[x, y], ...] or [{x, y}, ...]; pressed at the first, released at the last."
)
_DY = "scroll: wheel notches down (>0) or up (<0); 5 is about a page."
_KEYS = "key: 'ctrl+s', 'ctrl+a Delete' (chords in order) or ['CTRL', 'S'] (one chord)."


class ComputerUseTool(BaseTool):
    """One tool, eleven actions, on the configured X display."""

    name = "computer_use"
    description = (
        "See and operate the desktop (an X display): take a screenshot, click, double/right "
        "click, move the mouse, drag along a path, scroll, type text, press keys, wait. "
        "Coordinates are pixels of the latest screenshot (at most 1280×800; (0, 0) top left). "
        "Every action returns a fresh screenshot. Take one first to see the screen."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "x": {**_INT, "description": _X},
            "y": {**_INT, "description": "Screenshot y."},
            "path": {
                "type": "array",
                "description": _PATH,
                "items": {"type": ["array", "object"]},
            },
            "dx": {**_INT, "description": "scroll: wheel notches right (>0) or left (<0)."},
            "dy": {**_INT, "description": _DY},
            "text": {"type": "string", "description": "type: the text (any language)."},
            "keys": {
                "description": _KEYS,
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
            },
            "seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WAIT,
                        "description": "wait: seconds (at most 10)."},
        },
        "required": ["action"],
        "additionalProperties": False,
    }  # fmt: skip
    side_effect = True
    private_data = True  # the screen shows the owner's windows
    # Not `untrusted_output`, though a screen can show anyone's text: that would turn every
    # later action of the turn into an approval card. type/key, the dangerous ones, are
    # approved every time (`consent_always`) instead.
    no_compress = True
    interfaces = frozenset({"web", "lark"})  # the design doc's table: not in the CLI
    timeout = 60.0

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt
        self._lock = asyncio.Lock()  # one pointer and keyboard: calls of a round run in turn
        self.clipboard = Clipboard()
        self._shown: Geometry | None = None  # of the latest screenshot: the model's coordinates

    def display(self) -> X11Display:
        """The Xvfb `larkbot serve` started, else `computer_use.display`, else $DISPLAY."""
        started = self.rt.services.get("desktop")
        if isinstance(started, X11Display):
            return started
        name = self.rt.settings.computer_use.display or os.environ.get("DISPLAY", "")
        if not name:
            raise DesktopError(
                "no X display: set computer_use.display (e.g. ':99') or "
                "computer_use.start_xvfb: true"
            )
        if not DISPLAY_NAME.match(name):
            raise DesktopError(f"computer_use.display {name!r} is not a display name like ':99'")
        return X11Display(name)

    def consent_check(self, **kw: Any) -> str | None:
        """Every action needs a yes (once per session; type/key every time)."""
        action = kw.get("action", "?")
        detail = {"type": f": {str(kw.get('text', ''))[:80]!r}", "key": f": {kw.get('keys')!r}"}
        return f"computer_use {action} on the desktop{detail.get(action, '')}"

    def consent_always(self, **kw: Any) -> bool:
        """Typing and key presses go to whatever window has focus: ask every time."""
        return kw.get("action") in ("type", "key")

    async def run(self, **kw: Any) -> ToolResult:
        """Validate, act, settle, screenshot; every failure is an error result with the reason."""
        action = kw.get("action", "")
        try:
            display = self.display()
            async with self._lock:
                return await self._run(display, action, kw)
        except (act.BadAction, OutOfBounds, DesktopError) as err:
            return ToolResult(f"Error: computer_use {action}: {err}", is_error=True)

    async def _run(self, display: X11Display, action: str, kw: dict[str, Any]) -> ToolResult:
        if action == "cursor_position":
            geometry = await asyncio.to_thread(screen_geometry, display)
            x, y = geometry.to_model(*await asyncio.to_thread(pointer_position, display))
            return ToolResult(f"cursor at ({x}, {y}); {geometry.describe()}")
        if action == "screenshot":
            done = "took a screenshot"
        elif action == "wait":
            seconds = float(kw.get("seconds") or 1.0)
            await asyncio.sleep(min(seconds, MAX_WAIT))
            done = f"waited {seconds:g} s"
        else:
            shown = self._shown
            if shown is None:  # no screenshot yet: the model guessed from nothing, check anyway
                shown = await asyncio.to_thread(screen_geometry, display)
            done = await self._act(display, shown, action, kw)
            await asyncio.sleep(self.rt.settings.computer_use.settle_seconds)
        return await self._observe(display, done)

    async def _act(
        self, display: X11Display, geometry: Geometry, action: str, kw: dict[str, Any]
    ) -> str:
        """Do one input action; a sentence saying what was done."""
        x, y = kw.get("x"), kw.get("y")
        if action in ("click", "double_click", "right_click"):
            button = 3 if action == "right_click" else 1
            repeat = 2 if action == "double_click" else 1
            where: list[str] = []
            if x is not None or y is not None:
                where = act.move_argv(*act.point(geometry, x, y))
            await run_xdotool(display, *where, *act.click_argv(button, repeat))
            return f"{action.replace('_', ' ')} at " + (f"({x}, {y})" if where else "the cursor")
        if action == "move":
            await run_xdotool(display, *act.move_argv(*act.point(geometry, x, y)))
            return f"moved the mouse to ({x}, {y})"
        if action == "drag":
            points = act.drag_points(geometry, kw.get("path"))
            await run_xdotool(display, *act.drag_argv(points))
            return f"dragged through {len(points)} points"
        if action == "scroll":
            dx, dy = int(kw.get("dx") or 0), int(kw.get("dy") or 0)
            argv = act.scroll_argv(dx, dy)
            await run_xdotool(display, *act.move_argv(*act.point(geometry, x, y)), *argv)
            return f"scrolled dx={dx} dy={dy} at ({x}, {y})"
        if action == "type":
            text = act.checked_text(kw.get("text"))
            if typeable(text):
                typing = 5.0 + len(text) * 0.02  # 8 ms a character, with room for a loaded box
                await run_xdotool(display, "type", "--delay", "8", "--", text, timeout=typing)
            else:  # xdotool type drops what the keymap lacks (Chinese): paste it
                await self.clipboard.paste(display, text)
            return f"typed {len(text)} characters"
        if action == "key":
            chords = act.chords(kw.get("keys") or "")
            await run_xdotool(display, "key", "--clearmodifiers", *chords)
            return f"pressed {' '.join(chords)}"
        raise act.BadAction(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")

    async def _observe(self, display: X11Display, done: str) -> ToolResult:
        """Screenshot + summary after an action."""
        folder = self.rt.home / "screenshots"
        path = folder / f"computer_use-{time.time_ns()}.png"
        geometry, cursor = await asyncio.gather(
            asyncio.to_thread(_capture_kept, display, path),
            asyncio.to_thread(pointer_position, display),
        )
        self._shown = geometry
        x, y = geometry.to_model(*cursor)
        summary = (
            f"{done}; {geometry.describe()}; cursor at ({x}, {y}). "
            f"Screenshot attached ({geometry.model_width}×{geometry.model_height})."
        )
        image = Attachment(str(path), kind="image", mime="image/png")
        return ToolResult(summary, attachments=(image,))

    async def aclose(self) -> None:
        """Stop the clipboard's xclip (the core calls this on shutdown)."""
        await self.clipboard.release()


def _capture_kept(display: X11Display, path: Path) -> Geometry:
    """Capture into `path`, keeping only the newest screenshots in its folder (blocking)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    geometry = capture(display, path)
    old = sorted(path.parent.glob("computer_use-*.png"))[:-KEEP_SCREENSHOTS]
    for stale in old:
        stale.unlink(missing_ok=True)
    return geometry


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """Registered only when `computer_use.enabled: true`."""
    return [ComputerUseTool(rt)] if rt.settings.computer_use.enabled else []
