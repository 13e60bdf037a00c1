"""Keeping runs alive and finishing what a dead replica left: the `RunKeeper` task.

Every third of the lease it renews the claims of the runs in flight on this replica; on the
leader it also re-takes runs whose lease ran out and that are not done (their replica died
mid-run: `kill -9`, OOM, a lost host) and runs each once more, late, with the tick's original
fire time, so its message keeps the same Lark `uuid`. A run that keeps killing its replica is
not retried forever: after `MAX_ATTEMPTS` starts the chat is told it failed. One re-taken more
than `misfire_grace_seconds` after its lease ran out is reported as missed, as APScheduler
reports ticks missed during downtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Protocol

from larkbot.logs import get_logger
from larkbot.scheduler.delivery import failure_text, message_uuid
from larkbot.scheduler.execute import ScheduleService as Firing
from larkbot.scheduler.execute import deliver, tell_missed
from larkbot.scheduler.runs import OpenRun, RunJournal, RunKey

log = get_logger(__name__)
MAX_ATTEMPTS = 3  # starts of one tick before it is given up (each one's replica died)
PRUNE_EVERY = 3600.0  # seconds between deletions of old done rows
KEEP_DONE = 86400.0  # done rows are kept a day: far longer than any replica could re-fire them


class ScheduleService(Firing, Protocol):
    """What the keeper needs of the service (`service.py`) beyond what a firing needs."""

    @property
    def is_leader(self) -> bool:
        """Whether this replica fires jobs now."""
        ...

    async def execute(self, **job: Any) -> None:
        """Run one tick and mark it done."""
        ...

    def track(self, task: asyncio.Task[Any]) -> None:
        """Hold a run's task (drained at stop)."""
        ...

    def abandon(self, key: RunKey) -> None:
        """Stop the run of `key` here if it is still running: another replica has it now."""
        ...


class RunKeeper:
    """Renews this replica's runs and, on the leader, re-runs the ones a dead replica left."""

    def __init__(self, service: ScheduleService, journal: RunJournal) -> None:
        self._service = service
        self._journal = journal
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._pruned = 0.0
        self.reruns = 0  # runs re-taken here (for tests and logs)

    def start(self) -> None:
        """Start the loop."""
        self._task = asyncio.create_task(self._loop(), name="scheduler-runs")

    def wake(self) -> None:
        """Look for runs to re-take now (this replica just became the leader)."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop renewing: runs still in flight here are re-run elsewhere after their lease."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._journal.close()

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._journal.lease / 3):
                    await self._wake.wait()  # a timer, or an early wake-up at `lead`
            self._wake.clear()
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # storage away: the next round retries
                log.warning("schedule_runs_error", exc_info=True)

    async def tick(self) -> None:
        """One round: renew (stopping runs another replica re-took), then (leader only) re-take
        expired runs and prune old ones."""
        for key in await self._journal.renew():
            self._service.abandon(key)
        if not self._service.is_leader:
            return
        for run in await self._journal.expired():
            taken = await self._journal.retake(run)
            if taken is not None:
                self.reruns += 1
                task = asyncio.create_task(self._rerun(taken), name=f"rerun:{run.key.job_id}")
                self._service.track(task)
        if time.monotonic() - self._pruned > PRUNE_EVERY:
            self._pruned = time.monotonic()
            await self._journal.prune(KEEP_DONE)

    async def _rerun(self, run: OpenRun) -> None:
        svc, key = self._service, run.key
        fire = key.fire_time(svc.tz)
        info = await svc.get(key.job_id) if svc.running else None
        bound = log.bind(job_id=key.job_id, fire_time=fire.isoformat(), attempt=run.attempts)
        late = time.time() - run.lease_until
        if info is None:
            bound.info("schedule_rerun_dropped", reason="the job was removed")
        elif run.attempts > MAX_ATTEMPTS:
            bound.warning("schedule_rerun_given_up")
            reason = f"运行它的实例 {run.attempts - 1} 次中途退出"
            await deliver(
                svc, info.target, failure_text(key.job_id, reason), message_uuid(key.job_id, fire)
            )
        elif late > svc.settings.scheduler.misfire_grace_seconds:
            bound.info("schedule_rerun_too_late", late_seconds=round(late))
            await tell_missed(svc, key.job_id, fire)
        else:
            bound.info("schedule_rerun", late_seconds=round(late, 1))
            await svc.execute(
                job_id=key.job_id,
                prompt=info.prompt,
                target=info.target,
                creator=info.creator,
                fire_time=fire,
            )
            return  # execute marked it done
        await self._journal.finish(key)
