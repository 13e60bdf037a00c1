"""Lark answers after the client's timeout (it did the call): exactly one message, no failure.

Every send carries a `uuid` and every CardKit operation one of its own; FakeLark dedupes
both as Lark does, and `answer_late` makes it do a call at once but answer it too late.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.transport import RetryPolicy
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, message_event, settings_for

REPLY = "POST /open-apis/im/v1/messages/{id}/reply"
SEND = "POST /open-apis/im/v1/messages"
CONTENT = "PUT /open-apis/cardkit/v1/cards/{card_id}/elements/{element_id}/content"
UPDATE = "PUT /open-apis/cardkit/v1/cards/{card_id}"
# A call times out after TIMEOUT; one answered LATE is retried at once, with the same body.
# TIMEOUT is above what any answer in time takes on a loaded machine (2 cores, other suites),
# so only the calls made late here time out; LATE is well past it.
TIMEOUT, LATE = 1.0, 2.5
QUICK = RetryPolicy(
    attempts=2, backoff_base=0.01, backoff_max=0.05, timeout=TIMEOUT, settle_seconds=15
)


@pytest.fixture
async def client(fake_lark: FakeLark) -> AsyncIterator[LarkClient]:
    async with httpx.AsyncClient() as http:
        yield LarkClient(
            http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret, retry=QUICK
        )


async def test_send_answered_late_every_attempt_is_one_message(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    # More late answers than `attempts`: the same uuid keeps going out until one is answered.
    fake_lark.answer_late(SEND, LATE, times=3)
    counted: list[str] = []
    client.transport.on_call = counted.append
    message_id = await client.send("oc_1", "text", {"text": "answer"}, uuid="u-late")
    sends = [r for r in fake_lark.requests if r.route == "POST /open-apis/im/v1/messages"]
    assert len(sends) == 4 and {r.json["uuid"] for r in sends} == {"u-late"}
    assert [m["message_id"] for m in fake_lark.sent] == [message_id]  # one message, its id
    assert fake_lark.dedup_hits == 3
    # the ledger counts what Lark counts: every attempt that reached it
    assert counted.count("/open-apis/im/v1/messages") == 4


async def test_unanswered_send_gives_up_after_settle_seconds(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    fake_lark.answer_late(SEND, LATE, times=100)
    client.transport.retry = RetryPolicy(
        attempts=2, backoff_base=0.01, timeout=TIMEOUT, settle_seconds=2
    )
    with pytest.raises(LarkAPIError) as info:
        await client.send("oc_1", "text", {"text": "answer"}, uuid="u-never")
    assert info.value.unanswered
    assert len(fake_lark.sent) == 1  # Lark has it once, however often it was asked


async def test_a_refused_send_is_not_retried(fake_lark: FakeLark, client: LarkClient) -> None:
    fake_lark.fail_next(SEND, status=400, code=230002, times=5)
    with pytest.raises(LarkAPIError) as info:
        await client.send("oc_1", "text", {"text": "x"})
    assert info.value.code == 230002 and not info.value.unanswered
    assert sum(r.route == SEND for r in fake_lark.requests) == 1


async def test_card_updates_answered_late_are_retried_not_refused(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    # A retried CardKit update reuses its sequence; without its uuid Lark would refuse it
    # (300317) and the live card would be given up for an update that had in fact landed.
    card = {
        "schema": "2.0",
        "config": {"streaming_mode": True},
        "body": {"elements": [{"tag": "markdown", "element_id": "md", "content": "…"}]},
    }
    card_id = await client.create_card(card)
    fake_lark.answer_late(CONTENT, LATE)
    await client.stream_text(card_id, "md", "Hello", 1)
    with pytest.raises(LarkAPIError) as info:  # a real reuse of a sequence is still refused
        await client.stream_text(card_id, "md", "Hello!", 1)
    assert info.value.code == 300317
    fake_lark.answer_late(UPDATE, LATE)
    await client.update_card(card_id, {**card, "config": {"streaming_mode": False}}, 2)
    state = fake_lark.cardkit.cards[card_id]
    assert state.element_history["md"] == ["Hello"] and state.sequences == [1, 2]
    assert fake_lark.cardkit.dedup_hits == 2 and not state.streaming_mode


async def test_turn_whose_answer_is_answered_late_posts_it_once(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: the reply timed out though Lark had posted it; the turn then posted "the
    # answer could not be delivered" too, so the user saw the answer and a failure notice.
    fake_llm.reply_text("the answer")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert s.app.client is not None
        s.app.client.transport.retry = QUICK
        fake_lark.answer_late(REPLY, LATE, times=3)
        assert (await s.post_event(message_event("hi", message_id="om_late_answer")))[0] == 200
        await fake_lark.wait_for(lambda: fake_lark.dedup_hits == 3, timeout=30)
        assert await s.app.idle(30)
        assert await s.app.message_status("om_late_answer") == "done"
    assert fake_lark.texts() == ["the answer"]


async def test_turn_lark_never_answers_is_retried_later_not_reported(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # No answer within settle_seconds: nothing says whether the reply is there, so no failure
    # notice (it could follow the answer); the claim goes back and a later run re-sends the
    # same uuids, which Lark dedupes.
    fake_llm.reply_text("the answer")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert s.app.client is not None
        s.app.client.transport.retry = RetryPolicy(
            attempts=1, backoff_base=0.01, timeout=TIMEOUT, settle_seconds=0.0
        )
        fake_lark.answer_late(REPLY, LATE, times=100)
        assert (await s.post_event(message_event("hi", message_id="om_silent")))[0] == 200
        assert await s.app.idle(30)
        assert await s.app.message_status("om_silent") == "claimed"  # released for a re-run
    assert fake_lark.texts() == ["the answer"]
