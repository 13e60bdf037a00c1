"""How long the served app's own loop kept /healthz waiting, the machine's share taken out.

Work left on the event loop holds /healthz up for the work's whole duration: the loop thread is
busy (or blocked in a call) the entire time. A shared, loaded machine (CI: two cores, other
test runs) also stalls the process now and then, but the thread is then runnable and waiting
for a CPU, and Linux counts that wait per thread (/proc/self/task/<id>/schedstat, its second
field). So each stall is measured as its wall time less the time the loop thread spent waiting
for a CPU meanwhile: the loop's own part, which does not grow with the machine's load.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from larkbot.heap import freeze_startup_heap
from tests.lark_harness import Served

POLL_GAP = 0.01


class CpuWait:
    """The calling (loop) thread's wait, runnable, for a CPU so far: `with CpuWait() as w: w()`.

    Only the loop thread's, in one read of a file kept open: reading every thread's file hands
    the GIL over once per file, and with a worker thread busy each hand-off can cost the 5 ms
    switch interval (the probe itself then held the loop ~90 ms).
    """

    def __init__(self) -> None:
        path = f"/proc/self/task/{threading.get_native_id()}/schedstat"
        try:
            self._fd: int | None = os.open(path, os.O_RDONLY)
        except OSError:  # not Linux: no machine share is taken out, the check is only stricter
            self._fd = None

    def __call__(self) -> float:
        """Seconds waited so far."""
        if self._fd is None:
            return 0.0
        return int(os.pread(self._fd, 64, 0).split()[1]) / 1e9

    def __enter__(self) -> CpuWait:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The heap frozen as `serve` freezes it once started (larkbot/heap.py), then unfrozen.

    Without it a full collection walks the whole test process's heap (pytest, every module
    and earlier test's leftovers: ~280,000 objects, 160 ms of CPU here, stretched past 800 ms
    on a loaded machine): a stall `serve` does not have, whatever the input.
    """
    freeze_startup_heap()
    try:
        yield
    finally:
        gc.unfreeze()  # for the other tests, as before


class Stall(NamedTuple):
    """The slowest /healthz wait: `own` (the loop's part) and `wall` (as a client saw it), s."""

    own: float
    wall: float

    def __str__(self) -> str:
        return f"{self.own * 1000:.0f} ms own ({self.wall * 1000:.0f} ms wall)"


def _stall(wall: float, waited: float) -> Stall:
    return Stall(wall - min(waited, wall), wall)


async def worst_health(s: Served, done: Callable[[], bool], within: float) -> Stall:
    """Poll /healthz until `done()` (bounded by `within` s); the slowest wait meanwhile.

    A stall that falls between two requests shows as the pause between them overshooting
    POLL_GAP, so it counts too: a client asking at that moment would have waited as long.
    """
    assert s.http is not None
    worst, deadline = Stall(0.0, 0.0), time.monotonic() + within
    with CpuWait() as waited:
        while not done():
            assert time.monotonic() < deadline, f"not done in {within} s"
            started, asked = time.perf_counter(), waited()
            async with s.http.get(s.url("/healthz")) as resp:
                assert resp.status == 200
            answered, got = time.perf_counter(), waited()
            worst = max(worst, _stall(answered - started, got - asked))
            await asyncio.sleep(POLL_GAP)
            overshoot = max(time.perf_counter() - answered - POLL_GAP, 0.0)
            worst = max(worst, _stall(overshoot, waited() - got))
    return worst
