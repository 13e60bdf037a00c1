"""Scheduled jobs during the soak: created up front, each made due again a few seconds after
its previous result reached the fake Lark; every tick must produce exactly one message."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from bench.soak_rig import StampedLark
from larkbot.config import parse_settings
from larkbot.scheduler import ScheduleService
from larkbot.storage.db import Database
from tests.lark_harness import OWNER

TICK_BOUND = 90.0  # a tick may wait for a killed leader's leases (10 s) plus polls: ample


def job_chat(j: int) -> str:
    """The chat job `j` reports to."""
    return f"oc_job_{j}"


class JobTicker:
    """Creates the jobs through a writer-only ScheduleService (like `larkbot chat`), ticks them."""

    def __init__(self, pg_url: str, lark: StampedLark, jobs: int, pause: float) -> None:
        self.lark, self.jobs, self.pause = lark, jobs, pause
        settings = parse_settings({"storage": {"url": pg_url}, "scheduler": {"timezone": "UTC"}})
        self.db = Database(pg_url)
        self.svc = ScheduleService(settings, self.db, role="writer")
        self.ticks = [0] * jobs
        self.latency: list[float] = []
        self.never_fired: list[str] = []
        self._stopping = False

    async def start(self) -> None:
        """Store the jobs (hourly, so only our ticks make them due)."""
        await self.svc.start()
        target = {"channel": "lark", "chat_id": "", "thread_id": ""}
        creator = {"open_id": OWNER, "is_owner": True}
        for j in range(self.jobs):
            await self.svc.create(
                f"soakjob{j}",
                f"soak-job{j}: report",
                interval_minutes=60,
                target={**target, "chat_id": job_chat(j)},
                creator=creator,
            )

    def fired(self, j: int) -> int:
        """Messages job `j` has posted so far."""
        return len(self.lark.arrivals.get(job_chat(j), []))

    def stop_after_current(self) -> None:
        """Tick no more once each job's current tick has fired."""
        self._stopping = True

    async def run(self) -> None:
        """Tick every job until `stop_after_current` (at least once each)."""
        await asyncio.gather(*(self._tick(j) for j in range(self.jobs)))

    async def _tick(self, j: int) -> None:
        while True:
            due = self.ticks[j] + 1
            made_due = time.monotonic()
            await self.svc.set_next_run_time(f"soakjob{j}", datetime.now(UTC))
            self.ticks[j] = due
            try:
                await self.lark.wait_for(lambda d=due: self.fired(j) >= d, timeout=TICK_BOUND)
            except TimeoutError:
                self.never_fired.append(f"soakjob{j} tick {due}")
                return
            self.latency.append(self.lark.arrivals[job_chat(j)][due - 1] - made_due)
            if self._stopping:
                return
            await asyncio.sleep(self.pause)  # the job's period, not a synchronisation

    async def close(self) -> None:
        """Stop the writer and its database."""
        await self.svc.stop()
        await self.db.close()
