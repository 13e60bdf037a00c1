"""Structured cards: one card spec, rendered as Lark card JSON 2.0 or A2UI v0.9; pure functions.

ToolResult.ui shapes (what `ui_card` returns and channels deliver):
- web / cli: {"a2ui": {"surfaceId": str, "messages": [createSurface, updateComponents]}}
- lark: {"lark_card": card} for one card, {"lark_cards": [card, ...]} when the budgeted compiler
  split it; `lark_cards_of(ui)` turns either (or anything else) into the list to send, one
  interactive message per card.
"""

from __future__ import annotations

from typing import Any

from cards.lark_budget import markdown_card, markdown_cards
from cards.lark_card_templates import lark_card, lark_cards
from cards.lark_limits import card_json, validate_lark_card
from cards.spec import CardSpec, CardSpecError, parse_card
from cards.ui_card_templates import a2ui_payload


def lark_payload(cards: list[dict[str, Any]]) -> dict[str, Any]:
    """The ToolResult.ui for Lark: {"lark_card": c} for one card, {"lark_cards": [...]} for more."""
    return {"lark_card": cards[0]} if len(cards) == 1 else {"lark_cards": list(cards)}


def lark_cards_of(ui: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The Lark cards in a ui payload, in sending order; [] when it holds none."""
    if not isinstance(ui, dict):
        return []
    if isinstance(ui.get("lark_card"), dict):
        return [ui["lark_card"]]
    cards = ui.get("lark_cards")
    return [c for c in cards if isinstance(c, dict)] if isinstance(cards, list) else []


__all__ = [
    "CardSpec",
    "CardSpecError",
    "a2ui_payload",
    "card_json",
    "lark_card",
    "lark_cards",
    "lark_cards_of",
    "lark_payload",
    "markdown_card",
    "markdown_cards",
    "parse_card",
    "validate_lark_card",
]
