"""Acknowledgements first: turns wait to start while events are being acknowledged.

An event's 200 (or its long-connection ACK) must reach Lark within 3 s or Lark sends the event
again, and on one event loop every step of a running turn delays every ack behind it. So a turn
about to start first waits until no event has been acknowledged for `quiet` seconds, for at
most `max_defer`: a burst of events is acknowledged at full speed and its turns start right
after it; at ordinary rates (events further apart than `quiet`) nothing waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager

TURN_START_DEFER = 0.5  # seconds a turn's start may wait for a burst of acknowledgements
QUIET = 0.005  # no acknowledgement for this long: the burst is over


class Ingress:
    """Counts the events being acknowledged; `calm()` waits (bounded) until there are none."""

    def __init__(self, max_defer: float = TURN_START_DEFER, quiet: float = QUIET) -> None:
        self.max_defer = max_defer
        self.quiet = quiet
        self.acking_now = 0
        self.last_acked = 0.0  # monotonic time the latest acknowledgement ended
        self.deferred_starts = 0  # turn starts that had to wait (bench_webhook reports it)
        self._calm = asyncio.Event()  # set while nothing is being acknowledged
        self._calm.set()

    @contextmanager
    def acking(self) -> Iterator[None]:
        """Around one event's handling, from its first byte to its 200."""
        self.acking_now += 1
        self._calm.clear()
        try:
            yield
        finally:
            self.acking_now -= 1
            self.last_acked = time.monotonic()
            if not self.acking_now:
                self._calm.set()

    def _calm_now(self) -> bool:
        return not self.acking_now and time.monotonic() >= self.last_acked + self.quiet

    async def calm(self) -> None:
        """Return once nothing was acknowledged for `quiet`, or after `max_defer`."""
        if self._calm_now():
            return
        self.deferred_starts += 1
        deadline = time.monotonic() + self.max_defer
        while not self._calm_now():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self.acking_now:
                try:  # woken when the acknowledgements in progress are done
                    async with asyncio.timeout(left):
                        await self._calm.wait()
                except TimeoutError:
                    return
            else:
                await asyncio.sleep(min(self.last_acked + self.quiet - time.monotonic(), left))
