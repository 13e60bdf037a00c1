"""APScheduler without blocking the event loop: wakeups in a worker thread, runs started in batches.

`AsyncIOScheduler` runs `_process_jobs` (the due-job query, the trigger maths and one committed
UPDATE per fired job on the synchronous job store) on the loop thread: 1,000 jobs due in one
wakeup held the loop for ~350 ms. `OffLoopScheduler` runs that pass in a worker thread instead
(APScheduler guards its stores with a lock for exactly this, as `BackgroundScheduler` does) and
`BatchedLauncher` starts the submitted runs on the loop at most `BATCH` per loop iteration, so
a burst of due jobs costs the loop a few milliseconds at a time. bench/bench_scheduler.py
measures the lag.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from apscheduler.schedulers.asyncio import AsyncIOScheduler, run_in_event_loop

from larkbot.logs import get_logger

log = get_logger(__name__)
BATCH = 25  # runs started per loop iteration; each first step is short, so a few ms in all
RETRY_SECONDS = 10.0  # a wakeup pass that raised is retried (the store may be back by then)


class OffLoopFigures(NamedTuple):
    """What the off-loop machinery did so far (for the bench and the tests)."""

    passes: int  # wakeup passes completed
    longest_pass_seconds: float  # what the longest would have held the loop for
    batches: int  # loop iterations that started runs


class OffLoopScheduler(AsyncIOScheduler):
    """`AsyncIOScheduler` whose wakeup pass runs in a thread; one pass at a time, coalesced."""

    _pass: asyncio.Future[Any] | None = None
    _again = False
    passes = 0  # wakeup passes completed (for the bench and the tests)
    longest_pass_seconds = 0.0  # the longest pass: what it would have held the loop for

    @run_in_event_loop
    def wakeup(self) -> None:
        """Process due jobs in a worker thread; a wakeup during a pass runs one more pass after."""
        self._stop_timer()
        if self._eventloop is None:
            return  # shut down
        if self._pass is not None:
            self._again = True
            return
        self._pass = self._eventloop.run_in_executor(None, self._timed_pass)
        self._pass.add_done_callback(self._pass_done)

    def _timed_pass(self) -> float | None:
        start = time.perf_counter()
        try:
            return self._process_jobs()
        finally:
            took = time.perf_counter() - start
            self.longest_pass_seconds = max(self.longest_pass_seconds, took)

    def _pass_done(self, future: asyncio.Future[Any]) -> None:
        self._pass = None
        self.passes += 1
        if self._eventloop is None:
            return
        wait: float | None = RETRY_SECONDS
        if not future.cancelled() and future.exception() is None:
            wait = future.result()
        elif not future.cancelled():
            log.warning("scheduler_wakeup_failed", exc_info=future.exception())
        if self._again:
            self._again, wait = False, 0.0
        self._start_timer(wait)

    async def settle(self) -> None:
        """Wait for a wakeup pass in flight (before shutdown closes the store under it)."""
        while self._pass is not None:
            await asyncio.wait([self._pass])


class BatchedLauncher:
    """Starts submitted runs on the loop, at most `BATCH` per loop iteration, in arrival order.

    `submit` may be called from any thread (the wakeup pass runs in a worker); `start` runs on
    the loop and does what `AsyncIOExecutor` would do at once (create the run's task).
    """

    def __init__(self, start: Callable[..., None]) -> None:
        self._start = start
        self._queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches = 0  # loop iterations that started runs (for the bench and the tests)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the runs belong to."""
        self._loop = loop

    def submit(self, *args: Any) -> None:
        """Queue one run (thread-safe); it starts within a few loop iterations."""
        assert self._loop is not None, "bind() first"
        self._loop.call_soon_threadsafe(self._enqueue, args)

    def _enqueue(self, args: tuple[Any, ...]) -> None:
        self._queue.append(args)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain(), name="job-launch")

    async def _drain(self) -> None:
        try:
            while self._queue:
                for _ in range(min(BATCH, len(self._queue))):
                    try:
                        self._start(*self._queue.popleft())
                    except Exception:  # one bad run must not strand the ones behind it
                        log.exception("scheduler_run_start_failed")
                self.batches += 1
                await asyncio.sleep(0)  # let the batch's first steps and everyone else run
        finally:
            self._task = None

    async def launched(self) -> None:
        """Wait until every queued run has been started."""
        while self._task is not None:
            await asyncio.wait([self._task])
