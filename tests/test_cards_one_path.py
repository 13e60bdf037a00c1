"""One card path: every card any delivery path posts is budgeted and valid (Lark refuses others).

The FakeLark refuses, like Lark, a markdown component with more than four tables. An answer with
six tables, and a 40,000-character answer, go out through every path — streaming off, a fast
answer with streaming on, a slow streamed answer, a scheduled job — and each must arrive whole
in cards the project's validator accepts.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cards import validate_lark_card
from larkbot.app import App
from tests.fakes.lark_cardkit import too_many_tables
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.fakes.schedule import LARK_TARGET, OWNER
from tests.lark_harness import Served, message_event, settings_for

SIX_TABLES = "\n\n".join(
    f"## Table {i}\n\n| city | rain |\n|---|---|\n| c{i} | {i} mm |" for i in range(6)
)
LONG = "# Report\n\n" + "\n\n".join(f"Paragraph {i}: " + "lorem ipsum " * 30 for i in range(108))
ANSWERS = {"six_tables": (SIX_TABLES, "| c5 | 5 mm |"), "long": (LONG, "Paragraph 107:")}


def posted_cards(fake: FakeLark) -> list[dict[str, Any]]:
    """Every card JSON the bot put on Lark: messages, PATCHes, CardKit entities."""
    out = [m["body"] for m in fake.sent + fake.patches if m["body"].get("schema") == "2.0"]
    return out + [c.card for c in fake.cardkit.cards.values()]


def everything_shown(fake: FakeLark) -> str:
    """All text the user can see: message contents and every streamed element text."""
    texts = [m["content"] for m in fake.sent + fake.patches]
    for card in fake.cardkit.cards.values():
        texts += [t for history in card.element_history.values() for t in history]
    return "\n".join(texts)


def assert_valid_and_whole(fake: FakeLark, last_line: str) -> None:
    cards = posted_cards(fake)
    assert cards, "the answer is markdown: it goes out as cards"
    for card in cards:
        assert validate_lark_card(card) == [], json.dumps(card)[:300]
        assert not too_many_tables(card)
    assert "could not be delivered" not in everything_shown(fake)
    assert last_line in everything_shown(fake) or last_line in json.dumps(cards)


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("path", ["streaming_off", "fast_answer", "streamed"])
async def test_turn_answers_are_valid_cards_on_every_path(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, path: str, answer: str
) -> None:
    text, last_line = ANSWERS[answer]
    lark: dict[str, Any] = {"streaming": path != "streaming_off", "stream_updates_per_second": 10}
    lark["monthly_call_budget"] = 0  # the live card at its configured rate
    delay = 1.3 if path == "streamed" else 0.0  # a streaming card opens after ~1 s
    fake_llm.add(Reply(text=text, text_chunk=2000, delay=delay))
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url, lark=lark)) as s:
        await s.post_event(message_event("weather tables", message_id=f"om_{path}_{answer}"))
        await fake_lark.wait_for(lambda: bool(fake_lark.sent), timeout=30)
        assert await s.app.idle(30)
    if path == "streamed":
        assert fake_lark.cardkit.cards, "a slow turn streams into a CardKit card"
    assert_valid_and_whole(fake_lark, last_line)


@pytest.mark.parametrize("answer", ANSWERS)
async def test_scheduled_job_messages_are_valid_cards(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, answer: str
) -> None:
    text, last_line = ANSWERS[answer]
    fake_llm.add(Reply(text=text, text_chunk=2000))
    app = App(settings_for(home, fake_lark.domain, fake_llm.base_url))
    await app.start()
    try:
        svc = app.core.runtime.services["scheduler"]
        await svc.create(
            "tables", "the weather", interval_minutes=60, target=LARK_TARGET, creator=OWNER
        )
        await svc.set_next_run_time("tables", datetime.now(UTC))
        await fake_lark.wait_for(lambda: last_line in everything_shown(fake_lark), timeout=30)
    finally:
        await app.stop()
    assert all(m["receive_id"] == "oc_chat" for m in fake_lark.sent)
    assert_valid_and_whole(fake_lark, last_line)


def test_the_client_never_sends_a_card_the_validator_rejects() -> None:
    from cards.lark_check import InvalidCard
    from larkbot.lark.api.client import to_content

    bad = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": SIX_TABLES}]}}
    with pytest.raises(InvalidCard, match="tables"):
        to_content(bad)
    reference = {"type": "card", "data": {"card_id": "ck_1"}}  # a CardKit entity, not card JSON
    assert json.loads(to_content(reference)) == reference
