"""An answer as Lark messages: cards from `cards/` (the budget compiler), plain text split to fit.

`answer_messages(text)` is the one path every answer takes into Lark — a reply, a scheduled
job's message, a streamed card's overflow: markdown becomes cards built by
`cards.markdown_cards` (tables past the fourth per block turn into code, long text is split
over valid cards); plain text becomes text messages within Lark's size limit.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from cards.lark_budget import markdown_cards

# Lark's limit is 150 KB for a text message's content; keep a margin for the JSON envelope.
TEXT_LIMIT = 140_000

_MARKDOWN = re.compile(
    r"(^#{1,6}\s)|(^\s*[-*+]\s)|(^\s*\d+\.\s)|(```)|(\*\*[^*\n]+\*\*)|(\[[^\]\n]+\]\([^)\s]+\))"
    r"|(^\|.+\|\s*$)|(^>\s)|(`[^`\n]+`)",
    re.MULTILINE,
)


def looks_formatted(text: str) -> bool:
    """True when the answer uses markdown that a plain Lark text message would show raw."""
    return bool(_MARKDOWN.search(text))


def reply_uuid(message_id: str, part: str) -> str:
    """An idempotency key (<= 50 chars) from the inbound message: a retry never posts twice."""
    return hashlib.sha256(f"{message_id}#{part}".encode()).hexdigest()[:40]


def text_content(text: str) -> dict[str, Any]:
    """`content` of a text message."""
    return {"text": text}


def _size(text: str) -> int:
    # Size as it travels: JSON-escaped (newlines, quotes, backslashes) UTF-8.
    return len(json.dumps(text, ensure_ascii=False).encode())


def _hard_split(text: str, limit: int) -> list[str]:
    out: list[str] = []
    while text:
        lo, hi = 1, len(text)
        while lo < hi:  # the longest prefix that fits
            mid = (lo + hi + 1) // 2
            if _size(text[:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        out.append(text[:lo])
        text = text[lo:]
    return out


def _pieces(text: str, limit: int) -> list[str]:
    """Paragraphs; any paragraph too large on its own is cut by lines, then by characters."""
    pieces: list[str] = []
    for para in text.split("\n\n"):
        if _size(para) <= limit:
            pieces.append(para)
            continue
        buf = ""
        for line in para.split("\n"):
            candidate = f"{buf}\n{line}" if buf else line
            if _size(candidate) <= limit:
                buf = candidate
                continue
            if buf:
                pieces.append(buf)
            chunks = _hard_split(line, limit) if _size(line) > limit else [line]
            pieces.extend(chunks[:-1])
            buf = chunks[-1]
        pieces.append(buf)
    return pieces


def _fence_open(text: str) -> str | None:
    """The opening line of a code fence left open at the end of `text`, if any."""
    opened: str | None = None
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            opened = None if opened is not None else line.strip()
    return opened


def split_answer(text: str, limit: int) -> list[str]:
    """Split on paragraph boundaries so every part fits `limit` bytes; code fences stay balanced."""
    if _size(text) <= limit:
        return [text]
    margin = 64  # room for closing and reopening a fence
    parts: list[str] = []
    buf = ""
    for piece in _pieces(text, limit - margin):
        candidate = f"{buf}\n\n{piece}" if buf else piece
        if _size(candidate) <= limit - margin:
            buf = candidate
            continue
        if buf:
            parts.append(buf)
        buf = piece
    if buf:
        parts.append(buf)
    for i in range(len(parts) - 1):
        fence = _fence_open(parts[i])
        if fence:
            parts[i] += "\n```"
            parts[i + 1] = f"{fence}\n{parts[i + 1]}"
    return [p for p in parts if p.strip()]


def answer_messages(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(msg_type, content) of each message of an answer: valid cards, or text within limits."""
    text = text.strip() or "(no answer)"
    if looks_formatted(text):
        return [("interactive", card) for card in markdown_cards(text)]
    return [("text", text_content(part)) for part in split_answer(text, TEXT_LIMIT)]
