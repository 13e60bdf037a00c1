"""Leases across replicas: a replica starved past its lease loses the claim, not the message.

Two Apps on one database (two `serve` replicas); a starved holder is one whose lease lapses
(released here, as missed renewals leave it) while its turn still runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from larkbot.lark.claims.journal import MAX_ATTEMPTS
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import Served, message_event, settings_for

LEASE = 0.6  # renewed every 0.2 s, swept every 0.3 s


async def until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll `check` (bounded): the replicas' own timers drive what is awaited."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def test_message_handed_round_by_starved_replicas_is_answered_once(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: each lapse let the other replica retake the message and counted an attempt,
    # so after MAX_ATTEMPTS lapses it ended "failed", unanswered; meanwhile every replica that
    # had lost the claim ran its turn to the end for nothing.
    calls: list[float] = []
    quick = asyncio.Event()  # set: the model answers at once (the last run)

    def respond(body: object) -> Reply:
        calls.append(time.monotonic())
        return Reply(text="the answer", delay=0 if quick.is_set() else 120)  # past any bound

    fake_llm.responder = respond
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings, LEASE) as a, Served(settings, LEASE) as b:
        assert (await a.post_event(message_event("hi", message_id="om_pp")))[0] == 200
        await until(lambda: len(calls) == 1, "the first run never asked the model")
        holder, other = a, b
        lapses = MAX_ATTEMPTS + 1
        for lapse in range(lapses):
            if lapse == lapses - 1:
                quick.set()
            runs = len(calls)
            deadline = time.monotonic() + 30
            while len(calls) == runs:  # starved: the holder's renewals come too late
                await holder.lapse("om_pp")
                assert time.monotonic() < deadline, f"lapse {lapse}: nobody retook the message"
                await asyncio.sleep(0.02)
            # the holder hears at its next renewal that it lost the claim, and stops its turn
            assert await holder.app.idle(30), f"lapse {lapse}: the loser still runs its turn"
            holder, other = other, holder
        await fake_lark.wait_for(lambda: bool(fake_lark.sent), timeout=30)
        assert await holder.app.idle(30) and await other.app.idle(30)
        assert await a.app.message_status("om_pp") == "done"
    assert fake_lark.texts() == ["the answer"]
    assert len(calls) == lapses + 1  # one run per holder, none past the loss of its claim


def answer_slowly(fake_llm: FakeLLM, text: str) -> asyncio.Event:
    """The model answers `text` after a renewal period of LEASE; the event is set when asked."""
    asked = asyncio.Event()

    def respond(body: object) -> Reply:
        asked.set()
        return Reply(text=text, delay=1.0)

    fake_llm.responder = respond
    return asked


async def test_claim_that_vanished_from_redis_is_still_answered(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # Regression: Redis restarted without its data while a turn ran; the renewal found no
    # claim and the turn dropped its answer, though nobody else had the message and Lark
    # would not send it again.
    import redis.asyncio as redis

    from tests.lark_harness import redis_server

    asked = answer_slowly(fake_llm, "still answered")
    with redis_server(tmp_path) as url:
        settings = settings_for(
            home, fake_lark.domain, fake_llm.base_url, storage={"redis_url": url}
        )
        async with Served(settings, LEASE) as s:
            assert (await s.post_event(message_event("hi", message_id="om_gone")))[0] == 200
            await asyncio.wait_for(asked.wait(), 30)
            client = redis.from_url(url)
            await client.flushall()  # what a restart without persistence leaves
            await client.aclose()
            await fake_lark.wait_for(lambda: bool(fake_lark.sent), timeout=30)
            assert await s.app.idle(30)
    assert fake_lark.texts() == ["still answered"]


async def test_renewal_storage_refuses_cancels_no_turn(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # A failed batch renewal is storage trouble, not a lost claim: it is logged and the turn
    # goes on to answer (the next renewal, and the delivery check, try again).
    import redis.asyncio as redis
    from structlog.testing import capture_logs

    from tests.lark_harness import redis_server

    asked = answer_slowly(fake_llm, "answered anyway")
    with redis_server(tmp_path) as url, capture_logs() as logs:
        settings = settings_for(
            home, fake_lark.domain, fake_llm.base_url, storage={"redis_url": url}
        )
        client = redis.from_url(url)
        async with Served(settings, LEASE) as s:
            assert (await s.post_event(message_event("hi", message_id="om_oom")))[0] == 200
            await asyncio.wait_for(asked.wait(), 30)
            await client.config_set("maxmemory", 1)  # writes refused (noeviction): OOM
            failed = lambda: any(e["event"] == "lark_lease_renew_failed" for e in logs)  # noqa: E731
            await until(failed, "no renewal failed")
            await client.config_set("maxmemory", 0)
            await fake_lark.wait_for(lambda: bool(fake_lark.sent), timeout=30)
            assert await s.app.idle(30)
            assert await s.app.message_status("om_oom") == "done"
        await client.aclose()
    assert fake_lark.texts() == ["answered anyway"]
    assert not any(e["event"] == "lark_claim_lost" for e in logs)
