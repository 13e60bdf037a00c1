"""The model's chain of thought as a Lark card: one collapsed panel (llm.show_thinking)."""

from __future__ import annotations

from typing import Any

from cards.lark_budget import markdown_blocks, markdown_element, pack, split_block

THINKING_LIMIT = 20_000  # bytes of the chain of thought shown; the rest is cut with "…"


def thinking_card(thought: str) -> dict[str, Any]:
    """A card with the thought in a collapsed panel, cut at block boundaries past the limit."""
    blocks = [p for b in markdown_blocks(thought.strip()) for p in split_block(b, THINKING_LIMIT)]
    pieces = pack(blocks, THINKING_LIMIT, "\n\n") or [""]
    shown = pieces[0] + ("\n\n…" if len(pieces) > 1 else "")
    panel = {
        "tag": "collapsible_panel",
        "expanded": False,
        "header": {"title": {"tag": "plain_text", "content": "💭 Thinking"}},
        "elements": [markdown_element(shown)],
    }
    return {
        "schema": "2.0",
        "config": {"update_multi": True, "summary": {"content": "💭 Thinking"}},
        "body": {"elements": [panel]},
    }
