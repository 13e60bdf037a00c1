"""A refused card never loses an answer, end to end (issue #40): a served turn, with streaming
off and with a live card, and a scheduled job, against a FakeLark stricter than the budget
(more than two tables in a card: 230099 / ErrCode 11310). Six and forty tables arrive whole.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from larkbot.app import App
from tests.fakes.lark_cardkit import CardRules
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.fakes.schedule import LARK_TARGET, OWNER
from tests.lark_harness import Served, message_event, settings_for
from tests.table_answers import ANSWERS, CELL, assert_whole, shown


def finished(fake: FakeLark, answer: str) -> bool:
    """Every cell shows once and no live card is still streaming."""
    if any(card.streaming_mode for card in fake.cardkit.cards.values()):
        return False
    return CELL.findall(shown(fake)) == CELL.findall(answer)


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("path", ["streaming_off", "streamed"])
async def test_turn_answer_arrives_whole_when_lark_refuses_its_card(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, path: str, answer: str
) -> None:
    fake_lark.card_rules = CardRules(max_tables=2)
    text = ANSWERS[answer]
    lark: dict[str, Any] = {"streaming": path == "streamed", "stream_updates_per_second": 10}
    lark["monthly_call_budget"] = 0  # the live card at its configured rate
    delay = 1.3 if path == "streamed" else 0.0  # a streaming card opens after ~1 s
    fake_llm.add(Reply(text=text, text_chunk=500, delay=delay))
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url, lark=lark)) as s:
        await s.post_event(message_event("tables", message_id=f"om_{path}_{answer}"))
        await fake_lark.wait_for(lambda: finished(fake_lark, text), timeout=15)
    if path == "streamed":  # the live card's tables were refused: it points to the answer
        (card,) = fake_lark.cardkit.cards.values()
        assert "next message" in str(card.card)
    assert_whole(fake_lark, text)


@pytest.mark.parametrize("answer", ANSWERS)
async def test_scheduled_job_answer_arrives_whole_when_lark_refuses_its_card(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, answer: str
) -> None:
    fake_lark.card_rules = CardRules(max_tables=2)
    text = ANSWERS[answer]
    fake_llm.add(Reply(text=text, text_chunk=2000))
    app = App(settings_for(home, fake_lark.domain, fake_llm.base_url))
    await app.start()
    try:
        svc = app.core.runtime.services["scheduler"]
        await svc.create(
            "tables", "the tables", interval_minutes=60, target=LARK_TARGET, creator=OWNER
        )
        await svc.set_next_run_time("tables", datetime.now(UTC))
        await fake_lark.wait_for(lambda: finished(fake_lark, text), timeout=15)
    finally:
        await app.stop()
    assert all(m["receive_id"] == "oc_chat" for m in fake_lark.sent)
    assert_whole(fake_lark, text)
    assert len(fake_lark.requests) > len(fake_lark.sent) + 1  # cards were refused on the way
