"""What a card Lark refused falls back to: its readable text, as the plainest cards there are.

`card_text` recovers a card's words in reading order (header, markdown, plain text, table rows);
`plain_cards` puts text into cards with nothing Lark could object to: one markdown element each,
no tables (they become code blocks), a quarter of the size limit, as many cards as it takes.
"""

from __future__ import annotations

from typing import Any

from cards.lark_budget import markdown_blocks, pack, split_block, tables_to_code

PLAIN_CARD_BYTES = 8 * 1024  # of text per card: escaped JSON stays far below the 30 KB limit
_TEXT_TAGS = frozenset({"plain_text", "lark_md"})


def _table_text(table: dict[str, Any]) -> str:
    """A `table` component as lines: the column names, then one line per row."""
    columns = [c for c in table.get("columns") or [] if isinstance(c, dict)]
    names = [str(c.get("name", "")) for c in columns]
    lines = [" | ".join(str(c.get("display_name") or c.get("name", "")) for c in columns)]
    for row in table.get("rows") or []:
        if isinstance(row, dict):
            lines.append(" | ".join(str(row.get(n, "")) for n in names))
    return "\n".join(line for line in lines if line.strip())


def _texts(node: Any, out: list[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _texts(item, out)
        return
    if not isinstance(node, dict):
        return
    tag = node.get("tag")
    if tag == "markdown" or tag in _TEXT_TAGS:
        content = node.get("content")
        if isinstance(content, str) and content.strip():
            out.append(content)
        return
    if tag == "table":
        out.append(_table_text(node))
        return
    for key, value in node.items():
        if key != "config":  # the chat preview repeats the text
            _texts(value, out)


def card_text(card: dict[str, Any]) -> str:
    """The card's readable text in reading order, blocks separated by blank lines."""
    out: list[str] = []
    _texts(card, out)
    return "\n\n".join(out)


def plain_card(text: str) -> dict[str, Any]:
    """The plainest valid card: schema 2.0, one markdown element, no header."""
    element = {"tag": "markdown", "content": text}
    return {"schema": "2.0", "config": {"update_multi": True}, "body": {"elements": [element]}}


def plain_cards(text: str, max_bytes: int = PLAIN_CARD_BYTES) -> list[dict[str, Any]]:
    """`text` in order over as many plain cards as it takes; [] when it has no words."""
    if not text.strip():
        return []
    blocks = [
        p for b in markdown_blocks(tables_to_code(text, keep=0)) for p in split_block(b, max_bytes)
    ]
    return [plain_card(piece) for piece in pack(blocks, max_bytes, "\n\n")]
