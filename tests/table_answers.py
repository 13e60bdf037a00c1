"""Answers made of many small tables, and what the FakeLark chat finally shows of them.

Every cell names its table, row and column (`T3R2C1`), so a test can check that each table's
content reached the user exactly once and in order, whatever form its messages took.
"""

from __future__ import annotations

import json
import re

from tests.fakes.lark_server import FakeLark

CELL = re.compile(r"\bT\d+(?:H\d|R\d+C\d)\b")


def tables(n: int) -> str:
    """An answer of `n` small tables, each cell named after its table, row and column."""
    parts = [f"Here are {n} tables."]
    for i in range(n):
        rows = "\n".join(f"| T{i}R{r}C1 | T{i}R{r}C2 |" for r in (1, 2))
        parts.append(f"Table {i}:\n\n| T{i}H1 | T{i}H2 |\n|---|---|\n{rows}")
    return "\n\n".join(parts)


ANSWERS = {"six": tables(6), "forty": tables(40)}


def shown(fake: FakeLark) -> str:
    """What the chat finally shows, message by message (PATCHes and CardKit updates applied)."""
    parts = []
    for sent in fake.sent:
        body = json.loads(fake.messages[sent["message_id"]]["body"]["content"])
        if body.get("type") == "card":  # a CardKit entity: its elements' current text
            card = fake.cardkit.cards[body["data"]["card_id"]]
            parts.append("\n".join(card.elements.values()))
        else:
            parts.append(json.dumps(body, ensure_ascii=False))
    return "\n".join(parts)


def assert_whole(fake: FakeLark, answer: str) -> None:
    """Every cell of every table once, in order; no failure notice instead."""
    text = shown(fake)
    assert CELL.findall(text) == CELL.findall(answer)
    assert "could not answer" not in text
