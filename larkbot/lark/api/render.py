"""An answer as Lark messages: markdown as budgeted cards (`cards/`), plain text split to fit."""

from __future__ import annotations

import hashlib
import re
from json.encoder import encode_basestring as _escape  # json.dumps(s, ensure_ascii=False), in C
from typing import Any

from cards import markdown_cards

# Lark's limit is 150 KB for a text message's content; keep a margin for the JSON envelope and
# escaping. Cards have their own budget, kept by `cards.markdown_cards`.
TEXT_LIMIT = 140_000

_MARKDOWN = re.compile(
    r"(^#{1,6}\s)|(^\s*[-*+]\s)|(^\s*\d+\.\s)|(```)|(\*\*[^*\n]+\*\*)|(\[[^\]\n]+\]\([^)\s]+\))"
    r"|(^\|.+\|\s*$)|(^>\s)|(`[^`\n]+`)",
    re.MULTILINE,
)


_SEARCH_SPAN = 16_384  # characters per regex call (then whole lines to the next newline)


def looks_formatted(text: str) -> bool:
    """True when the answer uses markdown that a plain Lark text message would show raw."""
    # Every construct sits within one line, so searching span by span (each ending after a
    # newline) finds the same; one call over 400 KB held the GIL for 100 ms, and with it the
    # event loop, though it ran in a worker thread.
    start = 0
    while start < len(text):
        end = text.find("\n", start + _SEARCH_SPAN)
        end = len(text) if end < 0 else end + 1
        if _MARKDOWN.search(text, start, end):
            return True
        start = end
    return False


def reply_uuid(message_id: str, part: str) -> str:
    """An idempotency key (<= 50 chars) from the inbound message: a retry never posts twice."""
    return hashlib.sha256(f"{message_id}#{part}".encode()).hexdigest()[:40]


def text_content(text: str) -> dict[str, Any]:
    """`content` of a text message."""
    return {"text": text}


def answer_messages(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(msg_type, content) of each message that carries `text`, in sending order."""
    text = text.strip() or "(no answer)"
    if looks_formatted(text):
        return [("interactive", card) for card in markdown_cards(text)]
    return [("text", text_content(chunk)) for chunk in split_answer(text, TEXT_LIMIT)]


def _size(text: str) -> int:
    # Size as it travels: JSON-escaped (newlines, quotes, backslashes) UTF-8. Escaping is per
    # character, so the size of a concatenation is the sum of the sizes (minus the quotes).
    return len(_escape(text).encode("utf-8", "surrogatepass"))


def _body(text: str) -> int:
    """`_size` without the two quotes: additive, so joins are sized without re-encoding."""
    return _size(text) - 2


def _hard_split(text: str, limit: int) -> list[str]:
    out: list[str] = []
    while text:
        lo, hi = 1, min(len(text), limit)  # a character is at least one byte
        while lo < hi:  # the longest prefix that fits
            mid = (lo + hi + 1) // 2
            if _size(text[:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        out.append(text[:lo])
        text = text[lo:]
    return out


def _pack(items: list[str], sep: str, limit: int) -> list[str]:
    """Join consecutive items with `sep` while the JSON size stays within `limit` (linear)."""
    out: list[str] = []
    buf: list[str] = []
    size, extra = 2, _body(sep)
    for item in items:
        width = _body(item)
        if buf and size + extra + width > limit:
            out.append(sep.join(buf))
            buf, size = [], 2
        size += (extra if buf else 0) + width
        buf.append(item)
    if buf:
        out.append(sep.join(buf))
    return out


def _pieces(text: str, limit: int) -> list[str]:
    """Paragraphs; any paragraph too large on its own is cut by lines, then by characters."""
    pieces: list[str] = []
    for para in text.split("\n\n"):
        if _size(para) <= limit:
            pieces.append(para)
            continue
        lines: list[str] = []
        for line in para.split("\n"):
            lines.extend(_hard_split(line, limit) if _size(line) > limit else [line])
        pieces.extend(_pack(lines, "\n", limit))
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
    parts = _pack(_pieces(text, limit - margin), "\n\n", limit - margin)
    for i in range(len(parts) - 1):
        fence = _fence_open(parts[i])
        if fence:
            parts[i] += "\n```"
            parts[i + 1] = f"{fence}\n{parts[i + 1]}"
    return [p for p in parts if p.strip()]
