"""One card path: every way an answer reaches Lark sends only cards the validator accepts.

Regression: an answer with six markdown tables, sent with `lark.streaming: false`, as a fast
answer or by a scheduled job, skipped the budget compiler and was a card Lark refuses ("a
markdown component holds more than 4 tables"). Checked on every path, for that answer and
for a 40,000-character one, against FakeLark (what was really sent, patched and streamed).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from cards import validate_lark_card
from cards.progress_cards import streaming_card
from larkbot.config import LarkConfig
from larkbot.events import FinalAnswer, TextDelta
from larkbot.lark.client import CardRejected, LarkClient
from larkbot.lark.inbound import InboundMessage
from larkbot.lark.streaming import StreamingCardView
from larkbot.lark.transport import RetryPolicy
from larkbot.lark.turns import PlainReplyView
from larkbot.scheduler.delivery import LarkNotifier
from tests.fakes.lark_server import FakeLark

MSG = InboundMessage("om_user_1", "oc_chat", "p2p", "ou_owner", "hi")
SIX_TABLES = "\n\n".join(f"Table {i}\n\n| k | v |\n|---|---|\n| a{i} | b{i} |" for i in range(6))
LONG = "\n\n".join(f"## Part {i}\n\n" + "一段很长的内容，" * 120 for i in range(30))[:40_000]
ANSWERS = {"six tables": SIX_TABLES, "40,000 characters": LONG}


@pytest.fixture
async def client(fake_lark: FakeLark) -> AsyncIterator[LarkClient]:
    """A LarkClient on FakeLark with quick retries."""
    async with httpx.AsyncClient() as http:
        retry = RetryPolicy(attempts=2, backoff_base=0.01)
        yield LarkClient(
            http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret, retry=retry
        )


def every_card(fake: FakeLark) -> list[dict[str, Any]]:
    """Each card Lark got: sent, patched, and each streamed state of a CardKit entity."""
    cards = [m["body"] for m in fake.sent if m["msg_type"] == "interactive"]
    cards = [c for c in cards if "body" in c]  # a CardKit reference carries no card JSON
    cards += [p["body"] for p in fake.patches]
    for entity in fake.cardkit.cards.values():
        cards += [
            streaming_card(text) for texts in entity.element_history.values() for text in texts
        ]
    return cards


def assert_all_valid(fake: FakeLark, answer: str) -> None:
    cards = every_card(fake)
    assert cards, "no card was sent"
    for card in cards:
        assert validate_lark_card(card) == [], validate_lark_card(card)
    shown = json.dumps(cards, ensure_ascii=False)
    assert answer[-10:] in shown  # the end of the answer arrived, not only a "cut" note


@pytest.mark.parametrize("name", ANSWERS)
async def test_plain_replies(fake_lark: FakeLark, client: LarkClient, name: str) -> None:
    """`lark.streaming: false`."""
    await PlainReplyView(client, MSG).finish(FinalAnswer(ANSWERS[name]))
    assert_all_valid(fake_lark, ANSWERS[name])


@pytest.mark.parametrize("name", ANSWERS)
async def test_fast_answers(fake_lark: FakeLark, client: LarkClient, name: str) -> None:
    """Streaming on, but the turn ends before the live card opens."""
    view = StreamingCardView(client, MSG, LarkConfig(), delay=30)
    await view.on_event(TextDelta(ANSWERS[name]))
    await view.finish(FinalAnswer(ANSWERS[name]))
    assert fake_lark.cardkit.cards == {}
    assert_all_valid(fake_lark, ANSWERS[name])


@pytest.mark.parametrize("cardkit", [True, False], ids=["cardkit", "patch"])
@pytest.mark.parametrize("name", ANSWERS)
async def test_streamed_answers(
    fake_lark: FakeLark, client: LarkClient, name: str, cardkit: bool
) -> None:
    """Streaming on, the live card open: CardKit, or the PATCH fallback."""
    if not cardkit:
        fake_lark.fail_next("POST /open-apis/cardkit/v1/cards", status=400, code=230099)
    view = StreamingCardView(client, MSG, LarkConfig(stream_updates_per_second=10), delay=0)
    await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
    for i in range(0, len(ANSWERS[name]), 4000):
        await view.on_event(TextDelta(ANSWERS[name][i : i + 4000]))
    await view.finish(FinalAnswer(ANSWERS[name]))
    assert bool(fake_lark.cardkit.cards) is cardkit
    assert_all_valid(fake_lark, ANSWERS[name])


@pytest.mark.parametrize("name", ANSWERS)
async def test_scheduled_job_messages(fake_lark: FakeLark, client: LarkClient, name: str) -> None:
    await LarkNotifier(client).notify("oc_chat", ANSWERS[name], "sch-1")
    assert_all_valid(fake_lark, ANSWERS[name])


async def test_a_card_the_validator_rejects_is_never_sent(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    bad = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": SIX_TABLES}]}}
    with pytest.raises(CardRejected, match="tables"):
        await client.reply("om_user_1", "interactive", bad)
    assert fake_lark.sent == []
