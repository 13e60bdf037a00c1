"""The one stable job function every stored job points at, and how it finds its live service.

Stored jobs reference `larkbot.scheduler.runner:run_scheduled_job` by text with plain-data
kwargs, so refactoring any other module never orphans a job (APScheduler deletes jobs whose
function cannot be imported). Keep this module path and signature stable.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.executors.base import MaxInstancesReachedError

from larkbot.logs import get_logger
from larkbot.scheduler.offloop import BatchedLauncher
from larkbot.scheduler.runs import RunJournal, RunKey


class ScheduleService(Protocol):
    """What the runner needs of a live service (`service.py`): run one firing."""

    async def execute(self, **job: Any) -> None:
        """Run the job described by `job` (job_id, prompt, target, creator, fire_time)."""
        ...


RUNNER_REF = "larkbot.scheduler.runner:run_scheduled_job"
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


class FiringExecutor(AsyncIOExecutor):
    """AsyncIOExecutor that tells the job task which service and fire time it runs for.

    The job task copies the context current at `create_task`, so setting the ContextVar around
    submission hands the (coalesced) scheduled time to the runner, which derives the Lark
    message uuid from it: a retried send of the same run cannot post twice. Submissions come
    from the wakeup pass's worker thread (`offloop.py`); the launcher starts them on the loop.
    """

    def __init__(self, service_id: str, journal: RunJournal | None = None) -> None:
        super().__init__()
        self._service_id = service_id
        self._journal = journal
        self.launcher = BatchedLauncher(self._start_run)

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

    def start(self, scheduler: Any, alias: str) -> None:
        """Start as AsyncIOExecutor, on the scheduler's loop."""
        super().start(scheduler, alias)
        self.launcher.bind(self._eventloop)

    def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:
        self.launcher.submit(job, run_times)

    def _start_run(self, job: Any, run_times: list[datetime]) -> None:
        token = _firing.set(Firing(self._service_id, run_times[-1]))
        try:
            super()._do_submit_job(job, run_times)
        finally:
            _firing.reset(token)


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
