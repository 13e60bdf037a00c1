"""Leases across replicas: a replica starved past its lease loses the claim, not the message.

Two Apps on one database (two `serve` replicas); a starved holder is one whose lease lapses
(released here, as missed renewals leave it) while its turn still runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from larkbot.lark.journal import MAX_ATTEMPTS
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import Served, message_event, settings_for

LEASE = 0.6  # renewed every 0.2 s, swept every 0.3 s


async def until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
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
        return Reply(text="the answer", delay=0 if quick.is_set() else 30)

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
            deadline = time.monotonic() + 10
            while len(calls) == runs:  # starved: the holder's renewals come too late
                await holder.app.journal.release("om_pp")
                assert time.monotonic() < deadline, f"lapse {lapse}: nobody retook the message"
                await asyncio.sleep(0.02)
            # the holder hears at its next renewal that it lost the claim, and stops its turn
            loser = holder.app.dispatcher
            idle = lambda d=loser: d.queued == 0  # noqa: E731
            await until(idle, f"lapse {lapse}: the loser still runs its turn")
            holder, other = other, holder
        await fake_lark.wait_for(lambda: bool(fake_lark.sent), timeout=10)
        assert await holder.app.dispatcher.join(5) and await other.app.dispatcher.join(5)
        assert await a.app.journal.status("om_pp") == "done"
    assert fake_lark.texts() == ["the answer"]
    assert len(calls) == lapses + 1  # one run per holder, none past the loss of its claim
