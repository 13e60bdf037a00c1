"""A loop-lag probe: how late a 1 ms timer fires while something else shares the event loop."""

from __future__ import annotations

import asyncio
import time

from larkbot.tasks import cancel_and_wait

TICK = 0.001


class LagProbe:
    """`async with LagProbe() as p:` … then `p.max_ms`: the longest the loop held the timer up.

    `p.max_cpu_ms` is the most CPU the loop's thread used between two of the timer's firings:
    work done on the loop shows there in full, while a machine too busy to run the process (a
    loaded CI box) stretches `max_ms` but not this.
    """

    def __init__(self) -> None:
        self.max_ms = 0.0
        self.max_cpu_ms = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            start, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(TICK)
            late = (time.perf_counter() - start - TICK) * 1000
            self.ticks += 1
            self.max_ms = max(self.max_ms, late)
            self.max_cpu_ms = max(self.max_cpu_ms, (time.thread_time() - cpu) * 1000)

    async def __aenter__(self) -> LagProbe:
        self._task = asyncio.create_task(self._run(), name="lag-probe")
        await asyncio.sleep(0)  # the probe's first timer is armed
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        await cancel_and_wait(self._task)


async def idle_lag_ms(seconds: float) -> float:
    """The probe's max lag on this loop with nothing else to do (the baseline)."""
    async with LagProbe() as probe:
        await asyncio.sleep(seconds)
    return probe.max_ms
