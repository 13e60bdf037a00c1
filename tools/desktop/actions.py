"""The computer_use vocabulary as xdotool argv: pure functions, checked before anything runs.

Points arrive in screenshot space and leave in screen pixels (`Geometry.to_screen`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from tools.desktop.geometry import Geometry

MAX_TEXT = 2000
MAX_DRAG_POINTS = 32
MAX_SCROLL = 30  # wheel notches per direction
DRAG_STEPS = 4  # intermediate moves per segment: apps see a motion, not a jump
MAX_CHORDS = 16

# names models trained on other computer tools use → X keysyms
KEY_ALIASES = {
    "ctrl": "ctrl", "control": "ctrl", "alt": "alt", "option": "alt", "shift": "shift",
    "cmd": "super", "command": "super", "meta": "super", "super": "super", "win": "super",
    "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape",
    "backspace": "BackSpace", "tab": "Tab", "space": "space", "delete": "Delete", "del": "Delete",
    "insert": "Insert", "home": "Home", "end": "End", "pageup": "Prior", "pagedown": "Next",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right", "arrowup": "Up",
    "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right", "capslock": "Caps_Lock",
    "printscreen": "Print",
}  # fmt: skip
KEYSYM = re.compile(r"^[A-Za-z0-9_]{1,32}$")


class BadAction(ValueError):
    """Arguments that do not describe an action; the message says what to send instead."""


def keysym(name: str) -> str:
    """One key name → an xdotool keysym ('ENTER' → 'Return', 'a' → 'a', 'F5' → 'F5')."""
    key = name.strip()
    alias = KEY_ALIASES.get(key.lower())
    if alias:
        return alias
    if len(key) == 1 and key.isprintable() and key != "+":
        return key if KEYSYM.match(key) else _symbol(key)
    if KEYSYM.match(key):
        return key
    raise BadAction(f"unknown key {name!r}: use X key names such as ctrl, Return, Tab, F5, a")


SYMBOLS = {
    "-": "minus", "=": "equal", ",": "comma", ".": "period", "/": "slash", ";": "semicolon",
    "'": "apostrophe", "[": "bracketleft", "]": "bracketright", "\\": "backslash", "`": "grave",
}  # fmt: skip


def _symbol(char: str) -> str:
    if char not in SYMBOLS:
        raise BadAction(f"key {char!r}: type characters with action 'type', not 'key'")
    return SYMBOLS[char]


def chords(keys: str | Sequence[str]) -> list[str]:
    """'ctrl+s' / 'ctrl+a Delete' (xdotool style) or ['CTRL', 'S'] (one chord) → chords."""
    groups = [g.split("+") for g in keys.split()] if isinstance(keys, str) else [list(keys)]
    if not groups or not all(groups) or any(not k.strip() for g in groups for k in g):
        raise BadAction("keys is empty: send e.g. 'ctrl+s', 'Return' or ['ctrl', 'shift', 't']")
    if len(groups) > MAX_CHORDS:
        raise BadAction(f"at most {MAX_CHORDS} key chords per call")
    return ["+".join(keysym(k) for k in group) for group in groups]


def point(geometry: Geometry, x: Any, y: Any) -> tuple[int, int]:
    """Screenshot (x, y) → screen pixel; BadAction/OutOfBounds with the allowed range."""
    if x is None or y is None:
        raise BadAction("this action needs x and y (screenshot coordinates)")
    return geometry.to_screen(int(x), int(y))


def drag_points(geometry: Geometry, path: Any) -> list[tuple[int, int]]:
    """[[x, y], …] or [{x, y}, …] of 2..32 points → screen pixels."""
    if not isinstance(path, list) or not 2 <= len(path) <= MAX_DRAG_POINTS:
        raise BadAction(
            f"drag needs path: 2 to {MAX_DRAG_POINTS} points, e.g. [[10, 20], [200, 20]]"
        )
    out = []
    for p in path:
        if isinstance(p, dict):
            out.append(point(geometry, p.get("x"), p.get("y")))
        elif isinstance(p, list | tuple) and len(p) == 2:
            out.append(point(geometry, p[0], p[1]))
        else:
            raise BadAction(f"path point {p!r} is not [x, y] or {{'x': …, 'y': …}}")
    return out


def move_argv(sx: int, sy: int) -> list[str]:
    """Pointer to a screen pixel."""
    return ["mousemove", str(sx), str(sy)]


def click_argv(button: int, repeat: int = 1) -> list[str]:
    """Click `button` (1 left, 3 right) `repeat` times, 80 ms apart (a double-click to any app)."""
    if repeat == 1:
        return ["click", str(button)]
    return ["click", "--repeat", str(repeat), "--delay", "80", str(button)]


def drag_argv(points: list[tuple[int, int]]) -> list[str]:
    """Press at the first point, move through the others in small steps, release at the last."""
    argv = [*move_argv(*points[0]), "mousedown", "1"]
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        for i in range(1, DRAG_STEPS + 1):
            x, y = ax + (bx - ax) * i // DRAG_STEPS, ay + (by - ay) * i // DRAG_STEPS
            argv += ["sleep", "0.02", *move_argv(x, y)]
    return [*argv, "sleep", "0.05", "mouseup", "1"]


def scroll_argv(dx: int, dy: int) -> list[str]:
    """Wheel notches: dy > 0 down, dy < 0 up, dx > 0 right, dx < 0 left (X buttons 4–7)."""
    if dx == 0 and dy == 0:
        raise BadAction("scroll needs dy (down > 0, up < 0) and/or dx (right > 0, left < 0)")
    if abs(dx) > MAX_SCROLL or abs(dy) > MAX_SCROLL:
        raise BadAction(f"dx and dy are wheel notches, at most {MAX_SCROLL}; 5 is about a page")
    argv: list[str] = []
    if dy:
        argv += click_argv(5 if dy > 0 else 4, abs(dy))
    if dx:
        argv += click_argv(7 if dx > 0 else 6, abs(dx))
    return argv


def checked_text(text: Any) -> str:
    """The text to type: a non-empty string of at most 2,000 characters, no NUL."""
    if not isinstance(text, str) or not text:
        raise BadAction("type needs text (a non-empty string)")
    if len(text) > MAX_TEXT:
        raise BadAction(f"text is {len(text)} characters; type at most {MAX_TEXT} per call")
    if "\x00" in text:
        raise BadAction("text contains a NUL character")
    return text
