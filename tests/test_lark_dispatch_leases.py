"""Exactly-once edges in one replica: lapsed leases, queued turns, drain, unwritable text."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from larkbot.app import NotAccepting
from larkbot.lark.claims.journal import SqlJournal
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import Served, message_event, settings_for


async def test_lapsed_lease_does_not_rerun_a_turn_still_running_here(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: when a running turn's lease lapsed (busy loop, slow database), the sweeper's
    # recover() and a redelivery both retook the claim and queued the message a second time.
    asked = asyncio.Event()

    def respond(body: object) -> Reply:
        asked.set()
        return Reply(text="once", delay=0.5)

    fake_llm.responder = respond
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        event = message_event("hello", message_id="om_busy")
        assert (await s.post_event(event))[0] == 200
        await asyncio.wait_for(asked.wait(), 30)
        await s.lapse("om_busy")  # the lease lapsed while the turn runs
        assert await s.sweep() == 0
        assert (await s.post_event(event))[0] == 200  # Lark redelivers meanwhile
        assert await s.app.idle(30)
        assert await s.app.message_status("om_busy") == "done"
    assert len(fake_llm.requests) == 1
    assert fake_lark.texts() == ["once"]


async def test_queued_turn_keeps_its_lease_behind_a_long_one(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: only the running turn renewed its lease; the next message of the session,
    # waiting behind it, lapsed and another replica ran it out of order (and it ran here too).
    replies = iter([Reply(text="first", delay=2.0), Reply(text="second")])
    fake_llm.responder = lambda body: next(replies)
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings, lease_seconds=0.6) as s:
        other = SqlJournal(s.app.core.db, lease_seconds=0.6)  # a second replica's journal
        assert (await s.post_event(message_event("one", message_id="om_q1")))[0] == 200
        assert (await s.post_event(message_event("two", message_id="om_q2")))[0] == 200
        deadline = time.monotonic() + 30
        while not fake_lark.sent:  # the first turn runs > 3 leases; the second one waits
            assert await other.reclaim_expired() == []
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert await s.app.idle(30)
    assert fake_lark.texts() == ["first", "second"]


async def test_event_arriving_while_draining_is_refused_not_dropped(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: a request that passed the readiness check before SIGTERM got a 200 while the
    # dispatcher dropped it ("draining"), so Lark never redelivered it; over the long
    # connection the ACK said success too. Now: 503 over HTTP, an error ACK over ws.
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        await s.app.drain(1)  # SIGTERM: the dispatcher takes no more turns ...
        s.app.ready = True  # ... but this request passed the readiness check before it
        status, _ = await s.post_event(message_event("late", message_id="om_late"))
        assert status == 503
        s.app.ready = False
        with pytest.raises(NotAccepting):  # what the ws thread turns into an error ACK
            await s.app.submit(message_event("later", message_id="om_later"))
        assert await s.app.message_status("om_late") is None
    assert fake_llm.requests == [] and fake_lark.sent == []


async def test_lone_surrogate_in_a_message_is_answered_not_503(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: "\ud800" is valid JSON but not UTF-8; the journal write raised, so the
    # webhook answered 503 to every redelivery and the user never got an answer.
    fake_llm.reply_text("answered")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        event = message_event("hi \ud800 there", message_id="om_sur")
        assert (await s.post_event(event))[0] == 200
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await s.app.idle(30)
    assert fake_lark.texts() == ["answered"]
    assert "hi ? there" in str(fake_llm.requests[0]["messages"])


async def test_turn_whose_claim_another_replica_took_does_not_answer(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: after its lease lapsed and another replica retook the message, the original
    # turn still posted its answer (and marked the message done under the other's feet).
    asked = asyncio.Event()

    def respond(body: object) -> Reply:
        asked.set()
        return Reply(text="stale answer", delay=0.3)

    fake_llm.responder = respond
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        other = SqlJournal(s.app.core.db)
        assert (await s.post_event(message_event("hello", message_id="om_moved")))[0] == 200
        await asyncio.wait_for(asked.wait(), 30)
        await s.lapse("om_moved")  # the lease lapsed ...
        assert len(await other.reclaim_expired()) == 1  # ... and another replica took it
        assert await s.app.idle(30)
        assert await s.app.message_status("om_moved") == "claimed"  # the other one's to finish
    assert fake_lark.sent == []


async def test_answer_lark_refuses_is_reported_not_rerun(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: when Lark refused the reply (e.g. 230099 card build failed) the claim was
    # released, the user heard nothing, and the sweeper re-ran the whole turn (tools included).
    fake_llm.reply_text("an answer Lark will refuse")
    fake_lark.fail_next(
        "POST /open-apis/im/v1/messages/{id}/reply", status=400, code=230099, times=1
    )
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert (await s.post_event(message_event("hello", message_id="om_refused")))[0] == 200
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await s.app.idle(30)
        assert await s.app.message_status("om_refused") == "done"
    assert fake_lark.texts() == [
        "Sorry, I could not answer that: the answer could not be delivered."
    ]
    assert len(fake_llm.requests) == 1
