"""Acknowledgements first: turns wait to start while events are being acknowledged.

An event's 200 (or its long-connection ACK) must reach Lark within 3 s or Lark sends the event
again, and on one event loop every step of a running turn delays every ack behind it. So a turn
about to start first waits until no other event has been acknowledged for `quiet` seconds, for
at most `max_defer`: a burst of events is acknowledged at full speed and its turns start right
after it; at ordinary rates (events further apart than `quiet`) nothing waits. A turn's own
event does not count (it waits only for its own 200 to be out, which is at once): a lone event
would otherwise always wait `quiet` after its own ack.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

TURN_START_DEFER = 0.5  # seconds a turn's start may wait for a burst of acknowledgements
QUIET = 0.005  # no acknowledgement for this long: the burst is over
# The acknowledgement the current task is inside (its Ingress and number): the webhook handler
# and App.submit both say `acking()`, and one event must count once.
_inside: ContextVar[tuple[Ingress, int] | None] = ContextVar("larkbot_acking", default=None)


class Ingress:
    """Counts the events being acknowledged; `calm()` waits (bounded) until there are none."""

    def __init__(self, max_defer: float = TURN_START_DEFER, quiet: float = QUIET) -> None:
        self.max_defer = max_defer
        self.quiet = quiet
        self.deferred_starts = 0  # turn starts that waited for others (bench_webhook reports it)
        self._numbers = itertools.count(1)
        self._open: set[int] = set()  # acknowledgements in progress, by number
        self._ended = (0, 0.0)  # the latest acknowledgement to end: number, monotonic time
        self._ended_before = 0.0  # when the one before it ended
        self._calm = asyncio.Event()  # set while nothing is being acknowledged
        self._calm.set()

    @property
    def acking_now(self) -> int:
        """Events being acknowledged at this moment."""
        return len(self._open)

    def current(self) -> int:
        """The acknowledgement this task is inside (0: none), for `calm(own=...)`."""
        inside = _inside.get()
        return inside[1] if inside is not None and inside[0] is self else 0

    @contextmanager
    def acking(self) -> Iterator[None]:
        """Around one event's handling, from its first byte to its 200 (nested: counted once)."""
        if self.current():
            yield
            return
        number = next(self._numbers)
        token = _inside.set((self, number))
        self._open.add(number)
        self._calm.clear()
        try:
            yield
        finally:
            _inside.reset(token)
            self._open.discard(number)
            self._ended_before, self._ended = self._ended[1], (number, time.monotonic())
            if not self._open:
                self._calm.set()

    def _others_ended(self, own: int) -> float:
        """When the latest acknowledgement other than `own` ended."""
        return self._ended_before if self._ended[0] == own else self._ended[1]

    def _calm_now(self, own: int) -> bool:
        if self._open - {own}:
            return False
        return time.monotonic() >= self._others_ended(own) + self.quiet

    async def calm(self, own: int = 0) -> None:
        """Return once no event but `own` was acknowledged for `quiet` and `own`'s 200 is out;
        at the latest after `max_defer`."""
        deadline = time.monotonic() + self.max_defer
        counted = False
        while not self._calm_now(own) or own in self._open:
            if not counted and not self._calm_now(own):  # others are being acknowledged
                counted = True
                self.deferred_starts += 1
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self._open:
                try:  # woken when the acknowledgements in progress are done
                    async with asyncio.timeout(left):
                        await self._calm.wait()
                except TimeoutError:
                    return
            else:
                until = self._others_ended(own) + self.quiet
                await asyncio.sleep(min(until - time.monotonic(), left))
