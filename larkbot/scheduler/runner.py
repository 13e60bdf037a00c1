"""The one stable job function every stored job points at, and how it finds its live service.

Stored jobs reference `larkbot.scheduler.runner:run_scheduled_job` by text with plain-data
kwargs, so refactoring any other module never orphans a job (APScheduler deletes jobs whose
function cannot be imported). Keep this module path and signature stable.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from apscheduler.executors.base import BaseExecutor, MaxInstancesReachedError, run_coroutine_job

from larkbot.logs import get_logger
from larkbot.scheduler.runs import RunJournal, RunKey


class ScheduleService(Protocol):
    """What the runner needs of a live service (`service.py`): run one firing."""

    async def execute(self, **job: Any) -> None:
        """Run the job described by `job` (job_id, prompt, target, creator, fire_time)."""
        ...


RUNNER_REF = "larkbot.scheduler.runner:run_scheduled_job"
JOBSTORE = "default"  # the one job store's alias (events name it)
LOGGER = "apscheduler.executors.default"
log = get_logger(__name__)

# Live services by instance id; set at start, cleared at stop (several exist only in tests).
_services: dict[str, ScheduleService] = {}


@dataclass(frozen=True)
class Firing:
    """Which service submitted the run and the scheduled fire time it stands for."""

    service_id: str
    fire_time: datetime


_firing: ContextVar[Firing | None] = ContextVar("larkbot_schedule_firing", default=None)


def register(service_id: str, service: ScheduleService) -> None:
    """Make a started service reachable from the runner."""
    _services[service_id] = service


def unregister(service_id: str) -> None:
    """Forget a stopped service."""
    _services.pop(service_id, None)


class FiringExecutor(BaseExecutor):
    """Runs each due job as a task on the service's event loop, told its service and fire time.

    `BackgroundScheduler` submits from its own thread, where the wakeup pass and the synchronous
    job store stay off the loop. `_do_submit_job`, the one method `BaseExecutor` leaves to an
    executor, hands the run to the loop, which starts it as `AsyncIOExecutor` would, with the
    (coalesced) scheduled time in a ContextVar the task copies: the runner derives the Lark
    message uuid from it, so a retried send of the same run cannot post twice.
    """

    def __init__(self, service_id: str, journal: RunJournal | None = None) -> None:
        super().__init__()
        self._service_id = service_id
        self._journal = journal
        self._loop: asyncio.AbstractEventLoop | None = None
        self._count = threading.Lock()
        self._handed = 0  # handed to the loop, not started yet
        self._tasks: set[asyncio.Task[Any]] = set()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the runs belong to (before the scheduler starts)."""
        self._loop = loop

    def submit_job(self, job: Any, run_times: list[datetime]) -> None:
        """Start only a tick this replica claimed (`runs.py`); a skipped one gives its claim up."""
        key = RunKey.of(job.id, run_times[-1])
        if self._journal is not None and not self._journal.take_won(key):
            log.info("schedule_tick_skipped", job_id=job.id, reason="claimed by another run")
            return
        try:
            super().submit_job(job, run_times)
        except MaxInstancesReachedError:
            if self._journal is not None:
                self._journal.drop(key)
            raise

    def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:
        assert self._loop is not None, "bind() first"
        with self._count:
            self._handed += 1
        try:
            self._loop.call_soon_threadsafe(self._start_run, job, run_times)
        except RuntimeError:  # the loop is closed: nothing will start it
            with self._count:
                self._handed -= 1
            raise

    def _start_run(self, job: Any, run_times: list[datetime]) -> None:
        with self._count:
            self._handed -= 1
        token = _firing.set(Firing(self._service_id, run_times[-1]))
        try:
            coro = run_coroutine_job(job, JOBSTORE, run_times, LOGGER)
            task = asyncio.get_running_loop().create_task(coro, name=f"schedule-job:{job.id}")
        finally:
            _firing.reset(token)
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._finished(job.id, t))

    def _finished(self, job_id: str, task: asyncio.Task[Any]) -> None:
        try:
            events = task.result()
        except BaseException:  # as AsyncIOExecutor: the slot is freed and the error logged
            self._run_job_error(job_id, *sys.exc_info()[1:])
        else:
            self._run_job_success(job_id, events)
        self._tasks.discard(task)  # after the slot is free: the job may fire again now

    async def idle(self) -> None:
        """Wait until every run handed to the loop has started and finished."""
        while self._handed or self._tasks:
            if self._tasks:
                await asyncio.wait(set(self._tasks))
            else:
                await asyncio.sleep(0)  # a handed run starts within this loop iteration

    def shutdown(self, wait: bool = True) -> None:
        """Cancel the runs still going (any thread; their ticks re-run after their lease)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            for task in list(self._tasks):
                loop.call_soon_threadsafe(task.cancel)


async def run_scheduled_job(
    *,
    job_id: str,
    prompt: str,
    target: dict[str, str],
    creator: dict[str, Any],
    timezone: str,
    **extra: Any,
) -> None:
    """Run one scheduled job on the live service that fired it (the stored job's function)."""
    firing = _firing.get()
    service = _services.get(firing.service_id) if firing else None
    if service is None and len(_services) == 1:
        service = next(iter(_services.values()))
    if service is None:
        log.error("schedule_no_service", job_id=job_id)
        return
    fire_time = firing.fire_time if firing else datetime.now().astimezone()
    await service.execute(
        job_id=job_id,
        prompt=prompt,
        target=target,
        creator=creator,
        fire_time=fire_time,
    )
