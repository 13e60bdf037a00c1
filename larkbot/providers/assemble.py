"""Reassembling a streamed reply: tool-call deltas by index, and reasoning text kept out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from larkbot.logs import get_logger
from larkbot.providers.base import ToolCall

log = get_logger(__name__)


@dataclass
class _Slot:
    id: str | None = None
    name: str = ""
    parts: list[str] = field(default_factory=list)
    obj: dict[str, Any] | None = None


class ToolCallAssembler:
    """Collects `delta.tool_calls` fragments: calls interleave by index, arguments split anywhere.

    Tolerated quirks: a missing `index` (the fragment continues the last call unless it brings
    a new id), a second call reusing an index with a different id (a new call), the name
    repeated in every fragment, arguments sent as an object, and missing ids (synthesised).
    """

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_index: dict[int, int] = {}

    def _slot_for(self, index: Any, call_id: str | None) -> _Slot:
        if not isinstance(index, int):
            last = self._slots[-1] if self._slots else None
            if last is None or (call_id and last.id and call_id != last.id):
                self._slots.append(_Slot())
            return self._slots[-1]
        pos = self._by_index.get(index)
        if pos is None or (call_id and self._slots[pos].id and call_id != self._slots[pos].id):
            self._slots.append(_Slot())
            pos = self._by_index[index] = len(self._slots) - 1
        return self._slots[pos]

    def feed(self, deltas: Any) -> None:
        """Add the `tool_calls` list of one streamed delta."""
        if not isinstance(deltas, list):
            return
        for delta in deltas:
            if not isinstance(delta, dict):
                continue
            call_id = delta.get("id") or None
            slot = self._slot_for(delta.get("index"), call_id)
            if call_id and not slot.id:
                slot.id = call_id
            fn = delta.get("function") or {}
            name = fn.get("name")
            if isinstance(name, str) and name and name != slot.name:
                slot.name = name if not slot.name else slot.name + name
            args = fn.get("arguments")
            if isinstance(args, dict):
                slot.obj = args
            elif isinstance(args, str):
                slot.parts.append(args)

    def calls(self) -> list[ToolCall]:
        """The assembled calls, in the order they first appeared."""
        out: list[ToolCall] = []
        for slot in self._slots:
            if not slot.name:
                log.warning("tool_call_without_name_dropped", call_id=slot.id)
                continue
            raw: str | dict[str, Any] = slot.obj if slot.obj is not None else "".join(slot.parts)
            out.append(ToolCall.from_raw(slot.id, slot.name, raw))
        return out


_OPEN, _CLOSE = "<think>", "</think>"


class ThinkFilter:
    """Drops a leading `<think>…</think>` block some reasoning models put in `content`."""

    def __init__(self) -> None:
        self._state = "start"  # start -> thinking -> trim -> pass, or start -> pass
        self._buf = ""
        self.thought = ""  # the text inside the <think> block, once closed (or at flush)

    def feed(self, text: str) -> str:
        """Return the part of `text` that belongs to the answer."""
        if self._state == "pass":
            return text
        if self._state == "trim":  # drop the blank lines that follow </think>
            text = text.lstrip()
            if text:
                self._state = "pass"
            return text
        self._buf += text
        if self._state == "start":
            head = self._buf.lstrip()
            if head.startswith(_OPEN):
                self._state = "thinking"
                self._buf = head[len(_OPEN) :]
            elif _OPEN.startswith(head):
                return ""  # too early to tell
            else:
                self._state = "pass"
                out, self._buf = self._buf, ""
                return out
        end = self._buf.find(_CLOSE)
        if end < 0:
            return ""
        rest = self._buf[end + len(_CLOSE) :]
        self.thought = self._buf[:end].strip()
        self._state, self._buf = "trim", ""
        return self.feed(rest)

    def flush(self) -> str:
        """What is left at the end (an unfinished `<think>` prefix was answer text after all)."""
        out = self._buf if self._state == "start" else ""
        if self._state == "thinking":
            self.thought = self._buf.strip()
        self._buf = ""
        return out


def split_think(text: str) -> tuple[str, str]:
    """(answer, thought) of a whole reply that may open with a `<think>…</think>` block."""
    f = ThinkFilter()
    answer = f.feed(text) + f.flush()
    return answer, f.thought


def strip_think(text: str) -> str:
    """Remove a leading `<think>…</think>` block from a whole answer."""
    return split_think(text)[0]
