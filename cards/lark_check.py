"""The last gate before Lark: a card the validator rejects is never sent (Lark would refuse it)."""

from __future__ import annotations

from typing import Any

from cards.lark_limits import validate_lark_card


class InvalidCard(ValueError):
    """A card breaks one of Lark's limits; the message says which (a bug in its builder)."""


def is_card_json(content: Any) -> bool:
    """Card JSON 2.0 (not a CardKit reference `{"type": "card", "data": {...}}`, not text)."""
    return isinstance(content, dict) and content.get("schema") == "2.0"


def checked(card: dict[str, Any]) -> dict[str, Any]:
    """`card` unchanged when it is valid; InvalidCard naming the problems otherwise."""
    problems = validate_lark_card(card)
    if problems:
        raise InvalidCard("; ".join(problems[:5]))
    return card
