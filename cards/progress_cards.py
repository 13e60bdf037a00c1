"""The live progress card of a turn (steps, then the answer): CardKit entity and PATCH forms."""

from __future__ import annotations

import re
from typing import Any

ELEMENT_ID = "stream"
STREAM_MAX_BYTES = 20_000  # live text kept well under the 30 KB card limit (JSON escaping)


def live_text(content: str) -> str:
    """The live card's text, cut (at a character) once it nears the card limit."""
    raw = content.encode("utf-8")
    if len(raw) <= STREAM_MAX_BYTES:
        return content
    return raw[:STREAM_MAX_BYTES].decode("utf-8", "ignore") + "…"


def _summary(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return re.sub(r"[#*`>|\[\]<]", "", first).strip()[:60] or "…"


def streaming_card(content: str) -> dict[str, Any]:
    """The CardKit entity: one markdown element streamed by id, streaming mode on."""
    return {
        "schema": "2.0",
        "config": {
            "update_multi": True,
            "streaming_mode": True,
            "summary": {"content": "Working…"},
        },
        "body": {"elements": [{"tag": "markdown", "element_id": ELEMENT_ID, "content": content}]},
    }


def plain_card(content: str, answer: str | None = None) -> dict[str, Any]:
    """An ordinary interactive card with the same content (the PATCH fallback).

    `answer` (the final text) sets the chat preview; None means still working.
    """
    summary = "Working…" if answer is None else _summary(answer)
    return {
        "schema": "2.0",
        "config": {"update_multi": True, "summary": {"content": summary}},
        "body": {"elements": [{"tag": "markdown", "element_id": ELEMENT_ID, "content": content}]},
    }


def final_settings(content: str) -> dict[str, Any]:
    """Settings that end streaming and set the chat preview to the answer's first line."""
    return {"config": {"streaming_mode": False, "summary": {"content": _summary(content)}}}
