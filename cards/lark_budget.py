"""The budgeted compiler: fit content into valid Lark cards, degrading deterministically.

Degradation order: items past the display cap are cut with "… N more"; markdown tables past the
card-wide limit (`MAX_CARD_TABLES`, counted over all of a card's elements) become code blocks;
content that still does not fit is split over several cards (at most `max_cards`, the last one
saying how much was left out). Never an invalid card.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cards.lark_limits import (
    BUDGET_BYTES,
    MAX_CARD_TABLES,
    card_bytes,
    count_md_tables,
    fits,
    is_delimiter_row,
)

# build(start, end, closing, part, parts) -> the card showing items [start, end). A closing card
# is the last one: it carries the "… N more" note (when items were cut) and the footer.
# part/parts (1-based) label split cards.
Build = Callable[[int, int, bool, int, int], dict[str, Any]]
MAX_CARDS = 3
MAX_TEXT_CARDS = 10


def _largest_fit(build: Build, start: int, limit: int, final: bool, part: int, parts: int) -> int:
    """The largest end in (start, limit] whose card fits; start when not even one item does."""

    def ok(end: int) -> bool:
        return fits(build(start, end, final or end == limit, part, parts))

    lo, hi = start, limit  # the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    while lo > start and not ok(lo):  # a note's length is not monotonic: make sure
        lo -= 1
    return lo


def paginate(limit: int, build: Build, max_cards: int = MAX_CARDS) -> list[dict[str, Any]]:
    """Pack items [0, limit) into at most `max_cards` valid cards; the last says what was cut."""
    max_cards = max(1, min(max_cards, 9))  # one-digit part labels keep sizes stable
    spans: list[tuple[int, int, bool]] = []
    start = 0
    while start < limit or not spans:
        final = len(spans) == max_cards - 1
        end = _largest_fit(build, start, limit, final, len(spans) + 1, max_cards)
        if end == start:  # one item alone is over budget: templates cap text, so a bug
            raise ValueError(f"item {start} does not fit in a card even alone")
        closing = final or end == limit
        spans.append((start, end, closing))
        start = end
        if closing:
            break
    parts = len(spans)
    return [build(s, e, c, i + 1, parts) for i, (s, e, c) in enumerate(spans)]


def part_label(part: int, parts: int) -> str:
    """ " (2/3)" for split cards, "" for a single card."""
    return f" ({part}/{parts})" if parts > 1 else ""


# --- markdown text -------------------------------------------------------------------------


def _is_fence(line: str) -> str:
    stripped = line.lstrip()
    for fence in ("```", "~~~"):
        if stripped.startswith(fence):
            return fence
    return ""


def markdown_blocks(text: str) -> list[str]:
    """Split markdown at blank lines outside code fences; a fenced block stays whole."""
    blocks: list[str] = []
    current: list[str] = []
    fence = ""
    for line in text.replace("\r\n", "\n").split("\n"):
        marker = _is_fence(line)
        if fence:
            current.append(line)
            if marker == fence:
                fence = ""
            continue
        if marker:
            fence = marker
            current.append(line)
        elif line.strip():
            current.append(line)
        elif current:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def _utf8_cut(text: str, max_bytes: int) -> list[str]:
    """Cut text into pieces of at most max_bytes UTF-8 bytes, never inside a character."""
    return pack(text, max_bytes)


def pack(items: Iterable[str], max_bytes: int, sep: str = "") -> list[str]:
    """Join consecutive items with `sep` into pieces of at most max_bytes UTF-8 bytes."""
    extra = len(sep.encode("utf-8"))
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for item in items:
        width = len(item.encode("utf-8")) + extra
        if current and size + width > max_bytes:
            pieces.append(sep.join(current))
            current, size = [], 0
        current.append(item)
        size += width
    if current:
        pieces.append(sep.join(current))
    return pieces


def split_block(block: str, max_bytes: int) -> list[str]:
    """Split one oversized block by lines (re-fencing code), then long lines by bytes."""
    if len(block.encode("utf-8")) <= max_bytes:
        return [block]
    lines = block.split("\n")
    fence = _is_fence(lines[0])
    opener = lines[0] if fence else ""
    if fence:
        lines = lines[1:-1] if len(lines) > 1 and _is_fence(lines[-1]) else lines[1:]
    room = max_bytes - (len(opener.encode("utf-8")) + len(fence) + 2 if fence else 0)
    chunks = (chunk for line in lines for chunk in (_utf8_cut(line, room) if line else [""]))
    pieces = pack(chunks, room, "\n")
    return [f"{opener}\n{p}\n{fence}" if fence else p for p in pieces]


def tables_to_code(markdown: str, keep: int = MAX_CARD_TABLES) -> str:
    """Keep the first `keep` GFM tables; later ones become fenced code blocks (still readable)."""
    lines = markdown.split("\n")
    out: list[str] = []
    seen, i, fence = 0, 0, ""
    while i < len(lines):
        line = lines[i]
        marker = _is_fence(line)
        if fence or marker:
            fence = "" if fence and marker == fence else (fence or marker)
            out.append(line)
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if "|" in line and is_delimiter_row(nxt):
            seen += 1
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            table = lines[i:end]
            out.extend(table if seen <= keep else ["```text", *table, "```"])
            i = end
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def markdown_element(content: str, **extra: Any) -> dict[str, Any]:
    """A markdown component, its tables within the card-wide limit."""
    return {"tag": "markdown", "content": tables_to_code(content), **extra}


def _table_components(node: Any) -> int:
    if isinstance(node, dict):
        own = 1 if node.get("tag") == "table" else 0
        return own + sum(_table_components(v) for v in node.values())
    if isinstance(node, list):
        return sum(_table_components(v) for v in node)
    return 0


def _cap(node: Any, room: list[int]) -> Any:
    """`node` with markdown tables past `room[0]` (spent in document order) as code blocks."""
    if isinstance(node, list):
        return [_cap(v, room) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("tag") == "markdown" and isinstance(node.get("content"), str):
        found = count_md_tables(node["content"])
        if found <= room[0]:
            room[0] -= found
            return node
        capped = {**node, "content": tables_to_code(node["content"], keep=room[0])}
        room[0] = 0
        return capped
    return {k: _cap(v, room) if isinstance(v, dict | list) else v for k, v in node.items()}


def cap_tables(elements: list[dict[str, Any]], limit: int = MAX_CARD_TABLES) -> list[Any]:
    """Body elements whose tables, card-wide, stay within `limit` (the later ones as code)."""
    room = [max(0, limit - _table_components(elements))]
    return list(_cap(elements, room))


def grey_note(text: str) -> dict[str, Any]:
    """A small grey line (2.0 has no `note` component)."""
    return {
        "tag": "markdown",
        "content": f"<font color='grey'>{text}</font>",
        "text_size": "notation",
    }


def base_card(
    title: str | None,
    elements: list[dict[str, Any]],
    color: str = "blue",
    subtitle: str | None = None,
) -> dict[str, Any]:
    """The card skeleton every template shares: schema 2.0, optional header, body elements."""
    card: dict[str, Any] = {"schema": "2.0", "config": {"update_multi": True}}
    if title:
        header: dict[str, Any] = {
            "title": {"tag": "plain_text", "content": title},
            "template": color,
        }
        if subtitle:
            header["subtitle"] = {"tag": "plain_text", "content": subtitle}
        card["header"] = header
        card["config"]["summary"] = {"content": title}
    card["body"] = {"elements": cap_tables(elements)}
    return card


def markdown_cards(
    text: str, title: str | None = None, max_cards: int = MAX_TEXT_CARDS, color: str = "blue"
) -> list[dict[str, Any]]:
    """A markdown answer as one or more valid cards (split at block boundaries)."""
    overhead = card_bytes(
        base_card(f"{title or ''} (9/9)", [grey_note("… 99999 more characters not shown")], color)
    )
    room = max(1024, BUDGET_BYTES - overhead - 512)  # 512: JSON escaping of quotes/newlines
    blocks = [p for b in markdown_blocks(text) or [" "] for p in split_block(b, room // 2)]
    chars = [len(b) for b in blocks]

    def build(start: int, end: int, closing: bool, part: int, parts: int) -> dict[str, Any]:
        elements = [markdown_element("\n\n".join(blocks[start:end]))]
        if closing and end < len(blocks):
            elements.append(grey_note(f"… {sum(chars[end:])} more characters not shown"))
        label = part_label(part, parts) if title else ""
        return base_card(f"{title}{label}" if title else None, elements, color)

    return paginate(len(blocks), build, max_cards)


def markdown_card(text: str, title: str | None = None, color: str = "blue") -> dict[str, Any]:
    """One valid card for a markdown answer; text past the budget is cut with a note."""
    return markdown_cards(text, title, max_cards=1, color=color)[0]
