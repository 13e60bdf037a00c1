"""What a progress card says: the turn's steps (tool, short argument, ✓/✗, elapsed) and the answer.

Pure: `Progress` records events, `render()` gives the markdown (the card: `cards.lark_progress`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from cards.lark_budget import tables_to_code
from larkbot.events import (
    AgentEvent,
    ConsentRequested,
    TextDelta,
    ToolFinished,
    ToolStarted,
    UiPayload,
)

WORKING = "⏳ Working…"
MAX_STEPS_SHOWN = 12
_UNSAFE = re.compile(r"[`<>*_|\[\]\r\n]+")


def _first_text(value: Any) -> str:
    """A call's most telling string: itself, or a dict's title/name/query/first string."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("title", "name", "query", "command", "url", "path"):
            if isinstance(value.get(key), str):
                return str(value[key])
        return next((_first_text(v) for v in value.values() if isinstance(v, str | dict)), "")
    return json.dumps(value, ensure_ascii=False)


def short_argument(arguments: dict[str, Any], limit: int = 48) -> str:
    """The call's first argument as one line, without markdown specials, cut to `limit`."""
    if not arguments:
        return ""
    text = _first_text(next(iter(arguments.values())))
    text = " ".join(_UNSAFE.sub(" ", text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Step:
    """One tool call of the turn."""

    call_id: str
    name: str
    argument: str
    started: float
    elapsed: float | None = None
    ok: bool = True

    def line(self) -> str:
        """`- ✓ shell · ls -la · 0.4 s` (⚙ while running, ✗ on error)."""
        mark = "⚙" if self.elapsed is None else ("✓" if self.ok else "✗")
        parts = [f"{mark} **{self.name}**"]
        if self.argument:
            parts.append(self.argument)
        parts.append("…" if self.elapsed is None else f"{self.elapsed:.1f} s")
        return "- " + " · ".join(parts)


@dataclass
class Progress:
    """Steps and answer text of one turn, fed with agent events."""

    steps: list[Step] = field(default_factory=list)
    text: str = ""
    ui: list[dict[str, Any]] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)  # call_id -> tool awaiting approval

    def apply(self, event: AgentEvent, now: float | None = None) -> bool:
        """Record an event; True when what the card shows changed."""
        now = time.monotonic() if now is None else now
        if isinstance(event, TextDelta):
            self.text += event.text
            return bool(event.text)
        if isinstance(event, ConsentRequested):
            if event.always:  # an approval card is out: say what the turn waits for
                self.waiting[event.call_id] = event.name
            return event.always
        if isinstance(event, ToolStarted | ToolFinished):
            self.waiting.pop(event.call_id, None)
        if isinstance(event, ToolStarted):
            argument = short_argument(event.arguments)
            self.steps.append(Step(event.call_id, event.name, argument, now))
            return True
        if isinstance(event, ToolFinished):
            for step in reversed(self.steps):
                if step.call_id == event.call_id and step.elapsed is None:
                    step.elapsed, step.ok = event.elapsed, not event.is_error
                    return True
            step = Step(event.call_id, event.name, "", now, event.elapsed, not event.is_error)
            self.steps.append(step)
            return True
        if isinstance(event, UiPayload):
            self.ui.append(event.ui)
        return False

    def steps_markdown(self) -> str:
        """The step list (the last MAX_STEPS_SHOWN, with a count of the earlier ones)."""
        shown = self.steps[-MAX_STEPS_SHOWN:]
        lines = [s.line() for s in shown]
        hidden = len(self.steps) - len(shown)
        if hidden:
            lines.insert(0, f"- … {hidden} earlier steps")
        lines += [
            f"- 🔐 **{name}** · waiting for the owner's approval" for name in self.waiting.values()
        ]
        return "\n".join(lines)

    def render(self, answer: str | None = None, final: bool = False) -> str:
        """The card text: steps, then the answer so far (or `answer`); never empty."""
        text = self.text if answer is None else answer
        parts = []
        if self.steps or self.waiting:
            parts.append(self.steps_markdown())
        if text.strip():
            parts.append(tables_to_code(text.strip()))
        elif not final:
            parts.append(WORKING)
        return "\n\n".join(parts) or ("✓ Done" if final else WORKING)
