"""`larkbot doctor` line for the scheduler: job count, the next run, who leads."""

from __future__ import annotations

import time

import httpx
import sqlalchemy as sa

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.errors import ConfigError
from larkbot.scheduler.delivery import fmt_time
from larkbot.scheduler.leader import LOCK_NAME, scheduler_leader
from larkbot.scheduler.service import ScheduleService
from larkbot.storage.db import Database


async def check_scheduler(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """Open the job store read-mostly and summarise it."""
    if not settings.scheduler.enabled:
        return CheckResult("scheduler", True, "disabled (scheduler.enabled: false)")
    db = Database(settings.storage.url)
    try:
        svc = ScheduleService(settings, db, role="writer")
        await svc.start()
        try:
            jobs = await svc.list()
        finally:
            await svc.stop()
        leader = await _leader(db)
    except ConfigError as err:
        return CheckResult("scheduler", False, str(err), "fix the scheduler: section")
    finally:
        await db.close()
    upcoming = [j for j in jobs if j.next_run_time is not None]
    if not jobs:
        detail = f"no scheduled tasks (timezone {svc.tz})"
    elif upcoming:
        first = min(upcoming, key=lambda j: j.next_run_time)  # type: ignore[arg-type,return-value]
        when = fmt_time(first.next_run_time, svc.tz)
        detail = f"{len(jobs)} scheduled task(s); next: {first.id} at {when}"
    else:
        detail = f"{len(jobs)} scheduled task(s), all paused"
    return CheckResult("scheduler", True, f"{detail}; {leader}")


async def _leader(db: Database) -> str:
    t = scheduler_leader
    try:
        async with db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(t.c.holder, t.c.expires_at).where(t.c.name == LOCK_NAME)
                )
            ).first()
    # Table not created yet (serve never ran here): OperationalError on SQLite,
    # ProgrammingError (undefined table) on PostgreSQL.
    except (sa.exc.OperationalError, sa.exc.ProgrammingError):
        row = None
    if row is None or row.expires_at < time.time():
        return "no replica is running jobs now (start `larkbot serve`)"
    return f"jobs run on {row.holder}"
