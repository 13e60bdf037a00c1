"""ScheduleService: persistent jobs on APScheduler, run on exactly one replica, results pushed."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any, Literal

from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.jobstores.base import ConflictingIdError, JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_RUNNING

from larkbot.agent import Agent
from larkbot.config import LiveSettings, Settings
from larkbot.logs import get_logger
from larkbot.scheduler import runner
from larkbot.scheduler.delivery import AgentRunner, Notifier, as_runner
from larkbot.scheduler.execute import run_job, tell_missed
from larkbot.scheduler.leadership import Leadership
from larkbot.scheduler.recovery import RunKeeper
from larkbot.scheduler.runs import RunJournal, RunKey
from larkbot.scheduler.store import JobInfo, Passes, make_jobstore
from larkbot.scheduler.triggers import ScheduleError, cron_trigger, interval_trigger, zone
from larkbot.storage.db import Database

log = get_logger(__name__)
Role = Literal["auto", "writer"]


class ScheduleService:
    """Owns the APScheduler scheduler on the shared job store.

    role="auto" competes for the leader lease and runs due jobs only while leading; role="writer"
    (e.g. `larkbot chat`) only writes jobs, which the leader picks up at its next poll.

    The job store is synchronous, so every use of it runs off the loop: our create/list/get/remove
    through `asyncio.to_thread`, APScheduler's wakeup pass (due-job query, trigger maths, one
    UPDATE per fired job) in `BackgroundScheduler`'s own thread; the executor starts each due
    run as a task on the loop (`runner.FiringExecutor`). Public APScheduler API only.
    bench/bench_scheduler.py measures the loop's lag while 1,000 jobs fall due in one wakeup.
    """

    def __init__(
        self,
        settings: Settings | LiveSettings,
        db: Database,
        *,
        agent: Agent | AgentRunner | None = None,
        notifier: Notifier | None = None,
        role: Role = "auto",
        lease_seconds: float | None = None,
        poll_seconds: float | None = None,
        instance_id: str = "",
    ) -> None:
        self._live = settings if isinstance(settings, LiveSettings) else None
        self._settings = settings if isinstance(settings, Settings) else settings.get()
        cfg = self._settings.scheduler
        self.tz = zone(cfg.timezone)
        self.id = instance_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.agent: AgentRunner | None = as_runner(agent) if agent is not None else None
        self.notifier = notifier
        self.owner_check: Callable[[str], Awaitable[bool]] | None = None
        self.role = role
        self._db = db
        lease = cfg.lease_seconds if lease_seconds is None else lease_seconds
        poll = cfg.poll_seconds if poll_seconds is None else poll_seconds
        self.journal = RunJournal(db, self.id, lease)  # each tick's claim, lease and done mark
        self._executor = runner.FiringExecutor(self.id, self.journal)
        self._store = make_jobstore(self._settings.storage.url, self.journal)
        self._scheduler = BackgroundScheduler(
            jobstores={"default": self._store},
            executors={"default": self._executor},
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": cfg.misfire_grace_seconds,
            },
            timezone=self.tz,
        )
        self._leadership = Leadership(self, db, lease, poll)
        self._keeper = RunKeeper(self, self.journal)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._runs: set[asyncio.Task[Any]] = set()
        self._undelivered: dict[RunKey, asyncio.Task[Any]] = {}  # running runs, by tick
        self._started = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def settings(self) -> Settings:
        """The current settings (owners are re-read for each run)."""
        return self._live.get() if self._live else self._settings

    @property
    def running(self) -> bool:
        """True between start() and stop()."""
        return self._started

    @property
    def passes(self) -> Passes:
        """The scheduler thread's wakeup passes (count, longest) as the loop sees them."""
        return self._store.passes

    @property
    def is_leader(self) -> bool:
        """True while this instance runs due jobs."""
        return self._scheduler.state == STATE_RUNNING

    def bind(
        self,
        agent: Agent | AgentRunner | None = None,
        notifier: Notifier | None = None,
        owner_check: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        """Attach the agent (an Agent or any AgentRunner), the notifier and the owner lookup."""
        self.agent = as_runner(agent) if agent is not None else self.agent
        self.notifier = notifier or self.notifier
        self.owner_check = owner_check or self.owner_check

    async def is_owner(self, open_id: str) -> bool:
        """Whether a Lark user is an owner now (the bound lookup, else `owner.open_ids`)."""
        if self.owner_check is not None:
            return await self.owner_check(open_id)
        return bool(open_id) and open_id in self.settings.owner.open_ids

    async def start(self) -> None:
        """Open the job store (paused) and, for role="auto", start competing for leadership."""
        self._scheduler.add_listener(self._on_missed, EVENT_JOB_MISSED)
        self._loop = asyncio.get_running_loop()
        self._executor.bind(self._loop)
        # In a thread: on SQLite, creating the tables waits for the write lock, and while a
        # write transaction of this process's async engine held it, that transaction could not
        # go on (it needs this loop) — the start failed after the busy timeout, "locked".
        await asyncio.to_thread(self._store.create_tables)
        self._scheduler.start(paused=True)
        runner.register(self.id, self)
        self._started = True
        if self.role == "auto":
            self._keeper.start()
            await self._leadership.start(self.settings.storage.redis_url)
        log.info("scheduler_started", instance=self.id, role=self.role, leader=self.is_leader)

    async def stop(self, drain_seconds: float = 30.0) -> None:
        """Stop leading, let running jobs finish (bounded), release the lease, shut down."""
        if not self._started:
            return
        self._started = False
        await self._leadership.stop(before_release=lambda: self._drain(drain_seconds))
        await self._keeper.stop()  # runs still unfinished here re-run elsewhere after their lease
        for task in list(self._tasks):
            task.cancel()
        self._store.close_passes()
        # in a thread: shutting down waits for a wakeup pass in flight, which uses the store
        shutdown = asyncio.create_task(asyncio.to_thread(self._scheduler.shutdown, wait=False))
        done, _ = await asyncio.wait([shutdown], timeout=5)
        if not done:
            log.warning("scheduler_shutdown_slow", instance=self.id)
        runner.unregister(self.id)

    async def _drain(self, seconds: float) -> None:
        if self.is_leader:
            self._scheduler.pause()
        await self.idle(seconds)

    async def idle(self, timeout: float = 30.0) -> bool:
        """Wait (bounded) until no run is starting or running here; False when time ran out.

        A run counts until the executor has freed its `max_instances` slot, so the job can
        fire again as soon as this returns.
        """
        try:
            async with asyncio.timeout(timeout):
                await self._store.passes.settled()  # a pass in flight may still start runs
                await self._executor.idle()
                while self._runs:
                    await asyncio.wait(set(self._runs))
        except TimeoutError:
            return False
        return True

    # Leadership callbacks (called by Leadership on the loop).
    def lead(self) -> None:
        """Start running due jobs (resume wakes the scheduler at once) and re-take the runs a
        dead replica left unfinished."""
        self._scheduler.resume()
        self._keeper.wake()

    def follow(self) -> None:
        """Stop running due jobs; the store stays writable."""
        self._scheduler.pause()

    def poll(self) -> None:
        """Re-read the store for jobs other replicas added or changed."""
        self._scheduler.wakeup()

    # Job management; the job store is synchronous, so every call runs in a thread.
    def _require_running(self) -> None:
        if not self._started:
            raise ScheduleError("the scheduler is not running here")

    async def create(
        self,
        job_id: str,
        prompt: str,
        *,
        cron: str | None = None,
        interval_minutes: int | None = None,
        target: dict[str, str],
        creator: dict[str, Any],
    ) -> JobInfo:
        """Validate and store a job; ScheduleError says what to fix."""
        self._require_running()
        if (cron is None) == (interval_minutes is None):
            raise ScheduleError("give exactly one of cron or interval_minutes")
        if cron is not None:
            trigger: Any = cron_trigger(cron, self.tz)
            schedule = " ".join(cron.split())
        else:
            trigger = interval_trigger(interval_minutes, self.tz)  # type: ignore[arg-type]
            schedule = f"every {interval_minutes} min"
        kwargs = {
            "job_id": job_id,
            "prompt": prompt,
            "target": target,
            "creator": creator,
            "timezone": str(self.tz),
        }
        try:
            job = await asyncio.to_thread(
                self._scheduler.add_job,
                runner.RUNNER_REF,
                trigger=trigger,
                id=job_id,
                name=schedule,
                kwargs=kwargs,
            )
        except ConflictingIdError:
            raise ScheduleError(
                f"a job with id {job_id!r} already exists; choose another job_id, "
                f"or call schedule_remove(job_id={job_id!r}) first to replace it"
            ) from None
        log.info("schedule_created", job_id=job_id, schedule=schedule, target=target)
        return JobInfo.from_job(job)

    async def list(self) -> list[JobInfo]:
        """Every stored job, soonest first (paused ones last)."""
        self._require_running()
        jobs = await asyncio.to_thread(self._scheduler.get_jobs)
        return [JobInfo.from_job(j) for j in jobs]

    async def get(self, job_id: str) -> JobInfo | None:
        """One job, or None."""
        self._require_running()
        job = await asyncio.to_thread(self._scheduler.get_job, job_id)
        return JobInfo.from_job(job) if job else None

    async def remove(self, job_id: str) -> bool:
        """Delete a job; False when there was none."""
        self._require_running()
        try:
            await asyncio.to_thread(self._scheduler.remove_job, job_id)
        except JobLookupError:
            return False
        log.info("schedule_removed", job_id=job_id)
        return True

    async def set_next_run_time(self, job_id: str, when: datetime) -> None:
        """Move a job's next run (APScheduler's own `modify_job`); a past time makes it due."""
        self._require_running()
        try:
            await asyncio.to_thread(self._scheduler.modify_job, job_id, next_run_time=when)
        except JobLookupError:
            raise ScheduleError(f"no job with id {job_id!r}") from None

    async def run_now(self, job_id: str) -> None:
        """Make a job due now (`larkbot jobs run`): the leader fires it at its next poll, once;
        its schedule then continues from this run (an interval job's next run is one interval on).
        """
        await self.set_next_run_time(job_id, datetime.now(self.tz))

    # Runs.
    async def execute(self, **job: Any) -> None:
        """Run one claimed tick (called by the stored runner function, or a re-run), deliver its
        result, then mark it done; a cancelled run stays open and re-runs after its lease."""
        task = asyncio.current_task()
        if task is not None:
            self._runs.add(task)
        key = RunKey.of(job["job_id"], job["fire_time"])
        run = asyncio.create_task(run_job(self, **job), name=f"schedule-run:{key.job_id}")
        self._undelivered[key] = run
        try:
            try:
                await run
            except asyncio.CancelledError:
                if not run.cancelled() or (task is not None and task.cancelling()):
                    raise  # we are being stopped
                return  # abandoned: the replica that re-took the tick delivers it
            finally:
                self._undelivered.pop(key, None)
            await self.journal.finish(key)
        finally:
            if task is not None:
                self._runs.discard(task)

    def abandon(self, key: RunKey) -> None:
        """Stop the run of `key` if it is still running here (its claim was re-taken by the
        leader after its lease ran out under this stalled replica): the new holder delivers."""
        run = self._undelivered.pop(key, None)
        if run is not None:
            log.warning("schedule_run_abandoned", job_id=key.job_id, reason="claim re-taken")
            run.cancel()

    def track(self, task: asyncio.Task[Any]) -> None:
        """Count a task as a run (a re-run's; `idle` and the drain wait for it)."""
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)

    def _on_missed(self, event: JobExecutionEvent) -> None:
        job_id, when = event.job_id, event.scheduled_run_time

        async def tell() -> None:
            await tell_missed(self, job_id, when)
            await self.journal.finish(RunKey.of(job_id, when))

        self._spawn(tell)

    def _spawn(self, make: Callable[[], Coroutine[Any, Any, None]]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def create() -> None:
            task = loop.create_task(make())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        loop.call_soon_threadsafe(create)
