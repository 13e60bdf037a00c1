"""Acknowledgements first: turn steps wait while events are being acknowledged.

An event's 200 (or its long-connection ACK) must reach Lark within 3 s or Lark sends the event
again, and on one event loop every step of a running turn delays every ack behind it. So a turn
about to start, and each of its model rounds (history read, model request, reply), first waits
until no event has been acknowledged for `quiet` seconds, each step for at most `max_defer`: a
burst of events is acknowledged at full speed and the turns, new or already running, go on
right after it; at ordinary rates (events further apart than `quiet`) nothing waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")

TURN_START_DEFER = 0.5  # seconds one turn step may wait for a burst of acknowledgements
QUIET = 0.005  # no acknowledgement for this long: the burst is over


class _Acking:
    """`Ingress.acking()`: a class, not a generator, as it wraps every event (a third the cost)."""

    __slots__ = ("ingress",)

    def __init__(self, ingress: Ingress) -> None:
        self.ingress = ingress

    def __enter__(self) -> None:
        self.ingress.acking_now += 1  # `calm()` clears the event as it starts waiting: not here

    def __exit__(self, *_: object) -> None:
        self.ingress._acked()


class Ingress:
    """Counts the events being acknowledged; `calm()` waits (bounded) until there are none."""

    def __init__(self, max_defer: float = TURN_START_DEFER, quiet: float = QUIET) -> None:
        self.max_defer = max_defer
        self.quiet = quiet
        self.acking_now = 0
        self.last_acked = 0.0  # monotonic time the latest acknowledgement ended
        self.deferred_steps = 0  # turn steps that had to wait (bench_webhook reports it)
        # Set once nothing was acknowledged for `quiet`. Waiters are woken by one timer at the
        # end of the burst, not at every ack's end: 50 turns re-checking after each of a
        # burst's acks cost more than the acks themselves.
        self._calm = asyncio.Event()
        self._waiting = 0
        self._timer: asyncio.TimerHandle | None = None

    def acking(self) -> _Acking:
        """Around one event's handling, from its first byte to its 200 (a `with` block)."""
        return _Acking(self)

    def _acked(self) -> None:
        self.acking_now -= 1
        self.last_acked = time.monotonic()
        if self._waiting and not self.acking_now:
            self._arm(self.quiet)

    def _calm_now(self) -> bool:
        return not self.acking_now and time.monotonic() >= self.last_acked + self.quiet

    def _arm(self, delay: float) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(delay, self._check)

    def _check(self) -> None:
        """The timer: wake the waiters if the quiet window has passed since the last ack."""
        self._timer = None
        if self.acking_now:  # the ack in progress arms the timer again when it ends
            return
        left = self.last_acked + self.quiet - time.monotonic()
        if left > 0:
            self._arm(left)
        else:
            self._calm.set()

    async def calm(self) -> bool:
        """Return once nothing was acknowledged for `quiet`, or after `max_defer`; True when
        that meant waiting."""
        if self._calm_now():
            return False
        self.deferred_steps += 1
        self._calm.clear()
        if not self.acking_now:
            self._arm(max(self.last_acked + self.quiet - time.monotonic(), 0.0))
        self._waiting += 1
        try:
            async with asyncio.timeout(self.max_defer):
                await self._calm.wait()
        except TimeoutError:
            pass
        finally:
            self._waiting -= 1
        return True


class WhenCalm(Generic[T]):
    """Starts things (a new session's worker) once `calm()` returns: one waiting task for all
    that a burst of events brings, instead of a task each waiting in `calm()`.

    A task per new session, started at once (its two steps and its wait), cost 7–10 µs of each
    event's ~200 µs in a burst to new chats, before its 200; this costs 3. The shared wait counts
    as the first step of each thing started (`deferred_steps`); cancelled, it hands each one to
    `abandon`.
    """

    def __init__(
        self,
        ingress: Ingress,
        start: Callable[[T], None],
        abandon: Callable[[T], Awaitable[None]],
    ) -> None:
        self.ingress = ingress
        self._start = start
        self._abandon = abandon
        self._waiting: list[T] = []
        self._waiter: asyncio.Task[None] | None = None

    def add(self, thing: T) -> asyncio.Task[None] | None:
        """Start `thing` once calm; returns the waiting task if this call created it."""
        self._waiting.append(thing)
        if self._waiter is not None and not self._waiter.done():
            return None
        # (a waiter cancelled before its first step never ran: this one takes its things too)
        self._waiter = asyncio.create_task(self._start_all(), name="start-when-calm")
        return self._waiter

    async def close(self) -> None:
        """Abandon what still waits: its waiter was cancelled before it ran (a drain)."""
        if self._waiter is None or self._waiter.done():
            await self._abandon_all()

    async def _start_all(self) -> None:
        try:
            waited = await self.ingress.calm()
        except asyncio.CancelledError:
            await self._abandon_all()
            raise
        things = self._take()
        if waited:  # the wait counted once; it was each one's first step
            self.ingress.deferred_steps += len(things) - 1
        for thing in things:
            self._start(thing)

    async def _abandon_all(self) -> None:
        for thing in self._take():
            await self._abandon(thing)

    def _take(self) -> list[T]:
        self._waiter = None  # what is added from now on waits anew
        things, self._waiting = self._waiting, []
        return things
