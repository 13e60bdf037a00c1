"""Acknowledgements first: a turn step waits for a burst of acks, bounded by `max_defer`."""

from __future__ import annotations

import asyncio
import time

from larkbot.lark.ingress import Ingress


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
