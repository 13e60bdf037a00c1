"""Acknowledgements first: a turn step waits for a burst of acks, bounded by `max_defer`."""

from __future__ import annotations

import asyncio
import time

import pytest

from larkbot.lark.ingress import Ingress, WhenCalm


async def test_nothing_waits_when_no_event_is_being_acknowledged() -> None:
    ingress = Ingress(max_defer=5.0, quiet=0.0)
    started = time.monotonic()
    await ingress.calm()
    assert time.monotonic() - started < 0.5 and ingress.deferred_steps == 0


async def test_a_turn_starts_only_after_the_ack_in_progress() -> None:
    ingress = Ingress(max_defer=30.0, quiet=0.0)
    with ingress.acking():
        waiting = asyncio.create_task(ingress.calm())
        for _ in range(20):  # the loop runs other work meanwhile; the turn does not start
            await asyncio.sleep(0)
        assert not waiting.done()
    await asyncio.wait_for(waiting, 5)
    assert ingress.deferred_steps == 1


async def test_acks_that_never_stop_delay_a_turn_by_max_defer_at_most() -> None:
    ingress = Ingress(max_defer=0.05, quiet=0.0)
    with ingress.acking():
        started = time.monotonic()
        await asyncio.wait_for(ingress.calm(), 5)
        waited = time.monotonic() - started
    assert 0.04 <= waited < 2.0


async def test_the_quiet_window_follows_the_last_ack() -> None:
    # Events arriving back to back (each ack done before the next starts) are one burst.
    ingress = Ingress(max_defer=30.0, quiet=0.2)
    with ingress.acking():
        pass
    waiting = asyncio.create_task(ingress.calm())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # 0.05 s after the ack: still inside the quiet window
    await asyncio.wait_for(waiting, 5)


class Starts:
    """What a WhenCalm started and abandoned, in order."""

    def __init__(self, ingress: Ingress) -> None:
        self.started: list[str] = []
        self.abandoned: list[str] = []
        self.when_calm = WhenCalm(ingress, self.started.append, self.abandon)

    async def abandon(self, thing: str) -> None:
        await asyncio.sleep(0)  # abandoning may await (a journal release)
        self.abandoned.append(thing)


async def test_things_added_during_acks_start_after_them_with_one_waiting_task() -> None:
    ingress = Ingress(max_defer=30.0, quiet=0.0)
    starts = Starts(ingress)
    with ingress.acking():
        waiter = starts.when_calm.add("a")
        assert waiter is not None
        assert [starts.when_calm.add(t) for t in "bc"] == [None, None]  # the same wait
        for _ in range(20):
            await asyncio.sleep(0)
        assert starts.started == [] and not waiter.done()
    await asyncio.wait_for(waiter, 5)
    assert starts.started == ["a", "b", "c"]  # in the order they came
    assert ingress.deferred_steps == 3  # the one wait was each one's first step
    later = starts.when_calm.add("d")  # calm now: a new wait, over at once
    assert later is not None and later is not waiter
    await asyncio.wait_for(later, 5)
    assert starts.started[-1] == "d" and ingress.deferred_steps == 3


@pytest.mark.parametrize("began", [True, False], ids=["after-it-began", "before-it-began"])
async def test_a_cancelled_wait_abandons_what_it_would_have_started(began: bool) -> None:
    ingress = Ingress(max_defer=30.0, quiet=0.0)
    starts = Starts(ingress)
    with ingress.acking():
        waiter = starts.when_calm.add("a")
        starts.when_calm.add("b")
        assert waiter is not None
        if began:
            await asyncio.sleep(0)  # its body runs up to the wait
        waiter.cancel()  # else in the same loop iteration: its body never runs
        await asyncio.gather(waiter, return_exceptions=True)
        assert starts.abandoned == (["a", "b"] if began else [])
        await starts.when_calm.close()  # what drain does after cancelling its tasks
    assert waiter.cancelled()
    assert starts.abandoned == ["a", "b"] and starts.started == []  # once each, either way
    again = starts.when_calm.add("c")  # and a later thing gets a waiter of its own
    assert again is not None and again is not waiter
    await asyncio.wait_for(again, 5)
    assert starts.started == ["c"]
