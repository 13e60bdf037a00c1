"""Several replicas on one database: one leader fires each run once; takeover when it dies."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from larkbot.config import parse_settings
from larkbot.scheduler import ScheduleService
from larkbot.scheduler.leadership import Leadership
from larkbot.storage.db import Database
from tests.fakes.schedule import (
    LARK_TARGET,
    OWNER,
    RecordingNotifier,
    ScriptedAgent,
    scheduler_settings,
)

FAST = {"poll_seconds": 0.1, "lease_seconds": 1.0}


@pytest.fixture
async def db(home: Path) -> AsyncIterator[Database]:
    """The shared database file."""
    database = Database(scheduler_settings(home).storage.url)
    yield database
    await database.close()


async def test_two_services_on_one_database_fire_once(home: Path, db: Database) -> None:
    settings = scheduler_settings(home)
    agents, notes = [ScriptedAgent(), ScriptedAgent()], [RecordingNotifier(), RecordingNotifier()]
    a = ScheduleService(settings, db, agent=agents[0], notifier=notes[0], **FAST)
    b = ScheduleService(settings, db, agent=agents[1], notifier=notes[1], **FAST)
    await a.start()
    await b.start()
    try:
        assert (a.is_leader, b.is_leader) == (True, False)
        # The follower accepts the job (store write); the leader's poll picks it up.
        await b.create("once", "hello", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
        await b.set_next_run_time("once", datetime.now(UTC))
        await notes[0].next()
        await b.create("probe", "p", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
        await b.set_next_run_time("probe", datetime.now(UTC))
        await notes[0].next()
        assert (agents[0].runs_of("once"), agents[1].runs_of("once")) == (1, 0)
        assert notes[1].sent == []

        await a.stop()  # releases the lease: the other replica takes over at its next tick
        await b.set_next_run_time("once", datetime.now(UTC))
        await notes[1].next()
        assert b.is_leader and agents[1].runs_of("once") == 1
        assert agents[0].runs_of("once") == 1
    finally:
        await a.stop()
        await b.stop()


LEADER_SCRIPT = """
import asyncio, sys
from larkbot.config import parse_settings
from larkbot.logs import configure_logging
from larkbot.scheduler import ScheduleService
from larkbot.scheduler.leadership import Leadership
from larkbot.storage.db import Database

async def main():
    configure_logging("warning")
    settings = parse_settings({})
    svc = ScheduleService(settings, Database(settings.storage.url), poll_seconds=0.1,
                          lease_seconds=1.0)
    await svc.start()
    print("leader" if svc.is_leader else "follower", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_leader_process_killed_is_taken_over(home: Path, db: Database) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LEADER_SCRIPT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert line.strip() == b"leader"
        agent, notes = ScriptedAgent(), RecordingNotifier()
        svc = ScheduleService(scheduler_settings(home), db, agent=agent, notifier=notes, **FAST)
        await svc.start()
        assert not svc.is_leader
        await svc.create("job", "x", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
        proc.kill()  # no release: the lease must expire
        await proc.wait()
        await svc.set_next_run_time("job", datetime.now(UTC))
        await notes.next(timeout=30)
        assert svc.is_leader and agent.runs_of("job") == 1
        await svc.stop()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_redis_lock_elects_one_leader(home: Path, db: Database, tmp_path: Path) -> None:
    sock = tmp_path / "redis.sock"  # a unix socket: no TCP port to race other tests for
    server = await asyncio.create_subprocess_exec(
        "redis-server",
        "--port",
        "0",
        "--unixsocket",
        str(sock),
        "--save",
        "",
        "--appendonly",
        "no",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        while True:
            line = await asyncio.wait_for(server.stdout.readline(), 30)
            if not line:
                pytest.fail("redis-server exited before it was ready")
            if b"ready to accept connections" in line.lower():
                break
        settings = parse_settings({"storage": {"redis_url": f"unix://{sock}"}})
        agent, notes = ScriptedAgent(), RecordingNotifier()
        a = ScheduleService(settings, db, agent=agent, notifier=notes, **FAST)
        b = ScheduleService(settings, db, **FAST)
        await a.start()
        await b.start()
        assert (a.is_leader, b.is_leader) == (True, False)
        await b.create("r", "x", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
        await b.set_next_run_time("r", datetime.now(UTC))
        await notes.next()
        await a.stop()
        await b.stop()
    finally:
        server.kill()
        await server.wait()


async def _nothing() -> None:
    return None


class _HungLock:
    """A lease backend that never answers (a stalled database or Redis)."""

    holder = "hung"

    async def acquire(self) -> bool:
        await asyncio.Event().wait()
        return True

    async def release(self) -> None:
        return None


async def test_lease_tick_is_bounded_when_the_lock_backend_hangs(home: Path, db: Database) -> None:
    """Regression: a hung lease call stalled the leadership loop (and start()) forever."""
    settings = parse_settings({"scheduler": {"timezone": "UTC"}})
    svc = ScheduleService(settings, db, poll_seconds=0.1, lease_seconds=1.0)
    leadership = Leadership(svc, db, lease_seconds=1.0, poll_seconds=0.1)
    await asyncio.wait_for(leadership.start(lock=_HungLock()), 30)
    try:
        assert not leadership.leading
    finally:
        await leadership.stop(before_release=_nothing)
