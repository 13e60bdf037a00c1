"""`larkbot jobs list | show <id> | run <id> | remove <id>`: operate on the job store without
`serve`. `run` makes a job due now; the replica holding the scheduler lease fires it (once) at
its next poll, within `poll_seconds` (5 s)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from larkbot.config import Settings
from larkbot.logs import configure_logging
from larkbot.scheduler.service import ScheduleService
from larkbot.scheduler.triggers import ScheduleError
from larkbot.storage.db import Database


def run_jobs(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot jobs`; returns the exit code."""
    if args.action in ("show", "run", "remove") and not args.job_id:
        print(
            f"larkbot jobs {args.action}: give a job id (see `larkbot jobs list`)", file=sys.stderr
        )
        return 2
    configure_logging("warning")  # operator output stays clean; problems still show
    return asyncio.run(_run(settings, args.action, args.job_id or ""))


async def _run(settings: Settings, action: str, job_id: str) -> int:
    db = Database(settings.storage.url)
    # A writer never leads: the store is opened and edited, nothing fires in this process.
    service = ScheduleService(settings, db, role="writer")
    await service.start()
    try:
        return await _act(service, action, job_id)
    finally:
        await service.stop()
        await db.close()


async def _act(service: ScheduleService, action: str, job_id: str) -> int:
    if action == "list":
        jobs = await service.list()
        if not jobs:
            print("No scheduled tasks.")
        else:
            print(f"{len(jobs)} scheduled task(s), times in {service.tz}:")
            for job in jobs:
                print(job.line(service.tz, lang="en"))  # the CLI speaks English
        return 0
    if action == "show":
        info = await service.get(job_id)
        if info is None:
            print(f"No scheduled task {job_id!r}.", file=sys.stderr)
            return 1
        print(info.details(service.tz))
        return 0
    if action == "run":
        try:
            await service.run_now(job_id)
        except ScheduleError:
            print(f"No scheduled task {job_id!r}.", file=sys.stderr)
            return 1
        print(f"{job_id} is due now: the serving replica runs it within seconds.")
        return 0
    if await service.remove(job_id):
        print(f"Removed {job_id}.")
        return 0
    print(f"No scheduled task {job_id!r}.", file=sys.stderr)
    return 1
