"""The live progress card of a Lark turn (CardKit entity or PATCHed card) and its final settings.

Its one markdown element holds the steps and the answer so far, by `ELEMENT_ID`; the text put
into it is bounded by the caller (`live_text`) and its tables by `tables_to_code`.
"""

from __future__ import annotations

import re
from typing import Any

ELEMENT_ID = "stream"


def summary(text: str) -> str:
    """The chat preview of a card: the text's first line without markdown, at most 60 chars."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return re.sub(r"[#*`>|\[\]<]", "", first).strip()[:60] or "…"


def _card(content: str, preview: str, streaming: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"update_multi": True, "summary": {"content": preview}}
    if streaming:
        config["streaming_mode"] = True
    element = {"tag": "markdown", "element_id": ELEMENT_ID, "content": content}
    return {"schema": "2.0", "config": config, "body": {"elements": [element]}}


def streaming_card(content: str) -> dict[str, Any]:
    """The CardKit entity: one markdown element streamed by id, streaming mode on."""
    return _card(content, "Working…", streaming=True)


def plain_card(content: str, answer: str | None = None) -> dict[str, Any]:
    """An ordinary interactive card with the same content (the PATCH fallback).

    `answer` (the final text) sets the chat preview; None means still working.
    """
    return _card(content, "Working…" if answer is None else summary(answer), streaming=False)


def final_settings(content: str) -> dict[str, Any]:
    """Settings that end streaming and set the chat preview to the answer's first line."""
    return {"config": {"streaming_mode": False, "summary": {"content": summary(content)}}}
