"""Scheduler costs on SQLite: create/list per call, and how long a wakeup holds the event loop.

APScheduler's job store is synchronous and `AsyncIOScheduler` runs `_process_jobs` (due-job
query, one UPDATE per fired job, next-run query) on the loop thread; our own create/list/remove
go through `asyncio.to_thread`. This prints what that costs at 10/100/1000 jobs.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from larkbot.config import parse_settings
from larkbot.logs import configure_logging
from larkbot.scheduler import ScheduleService
from larkbot.storage.db import Database

TARGET = {"channel": "lark", "chat_id": "oc_bench", "thread_id": ""}
CREATOR = {"open_id": "ou_bench", "is_owner": True}


class _Sink:
    def __init__(self) -> None:
        self.count = 0
        self.done = asyncio.Event()
        self.want = 0

    async def notify(self, chat_id: str, text: str, uuid: str) -> None:
        self.count += 1
        if self.count >= self.want:
            self.done.set()


async def _agent(session_id: str, user_input: str, ctx: Any) -> str:
    return "ok"


async def _stall(kick: Any) -> float:
    """Seconds the loop is blocked by the wakeup `kick` queues (until the next callback runs)."""
    loop = asyncio.get_running_loop()
    barrier = loop.create_future()
    start = time.perf_counter()
    kick()
    loop.call_soon(barrier.set_result, None)
    await barrier
    return time.perf_counter() - start


async def _round(n: int) -> None:
    home = tempfile.mkdtemp(prefix="larkbot-bench-")
    os.environ["LARKBOT_HOME"] = home
    settings = parse_settings({})
    db = Database(settings.storage.url)
    sink = _Sink()
    svc = ScheduleService(
        settings, db, agent=_agent, notifier=sink, poll_seconds=3600, lease_seconds=7300
    )
    await svc.start()
    t0 = time.perf_counter()
    for i in range(n):
        await svc.create(f"job-{i}", "p", interval_minutes=60, target=TARGET, creator=CREATOR)
    create_ms = (time.perf_counter() - t0) / n * 1000
    t0 = time.perf_counter()
    jobs = await svc.list()
    list_ms = (time.perf_counter() - t0) * 1000
    assert len(jobs) == n
    idle = statistics.median([await _stall(svc.poll) for _ in range(20)]) * 1000
    # Make every job due at once while paused, then time the one wakeup that fires them all.
    svc.follow()
    now = datetime.now(UTC)
    for i in range(n):
        await svc.set_next_run_time(f"job-{i}", now)
    sink.want = n
    burst = await _stall(svc.lead) * 1000
    t0 = time.perf_counter()
    await asyncio.wait_for(sink.done.wait(), 120)
    deliver_s = time.perf_counter() - t0
    await svc.stop()
    await db.close()
    print(
        f"jobs={n:5d}  create {create_ms:6.2f} ms/job  list {list_ms:8.1f} ms  "
        f"idle wakeup blocks loop {idle:6.2f} ms  all-due wakeup blocks {burst:8.1f} ms "
        f"({burst / n:5.2f} ms/job)  runs delivered in {deliver_s:5.2f} s"
    )


def main() -> None:
    """Print the figures for 10, 100 and 1000 jobs."""
    configure_logging("error")

    async def run() -> None:
        for n in (10, 100, 1000):
            await _round(n)

    asyncio.run(run())
