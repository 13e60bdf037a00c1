"""ScheduleService on a real PostgreSQL: the job store (psycopg2) and the leader lease (asyncpg).

Each test gets a fresh database (the `pg_url` fixture); `make test` provides LARKBOT_TEST_PG_URL.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from larkbot.config import Settings, parse_settings
from larkbot.scheduler import ScheduleService
from larkbot.scheduler.leader import DbLeaderLock
from larkbot.scheduler.store import make_jobstore
from larkbot.storage.db import Database
from tests import test_scheduler_runs as runs_suite
from tests import test_scheduler_service as scheduler_suite
from tests.fakes.schedule import (
    LARK_TARGET,
    OWNER,
    RecordingNotifier,
    ScriptedAgent,
    service_factory,
)

# The SQLite suite's full lifecycle test (create → list → restart → fire → remove), collected
# here again so it runs on this module's PostgreSQL `make_service` fixture.
test_create_list_restart_fire_remove = scheduler_suite.test_create_list_restart_fire_remove
# Each tick's claim on PostgreSQL (INSERT/UPDATE … RETURNING through psycopg2 and asyncpg), on
# this module's `factory` fixture.
test_two_leaders_at_once_run_a_tick_once = runs_suite.test_two_leaders_at_once_run_a_tick_once
test_a_dead_replicas_run_is_rerun_once = (
    runs_suite.test_a_dead_replicas_run_is_rerun_once_with_the_ticks_uuid
)
test_a_retaken_run_stops = runs_suite.test_a_run_whose_claim_was_retaken_stops_without_posting

Factory = Callable[..., ScheduleService]


def pg_settings(url: str, **scheduler: Any) -> Settings:
    """Settings with `storage.url` on PostgreSQL and one owner (ou_owner)."""
    raw: dict[str, Any] = {"owner": {"open_ids": ["ou_owner"]}, "storage": {"url": url}}
    if scheduler:
        raw["scheduler"] = scheduler
    return parse_settings(raw)


@pytest.fixture
async def make_service(home: Any, pg_url: str) -> AsyncIterator[Factory]:
    """Services on the test's PostgreSQL database, each with its own Database (a replica)."""
    async with service_factory(lambda: pg_settings(pg_url), 0.1) as factory:
        yield factory


@pytest.fixture
def factory(make_service: Factory) -> Factory:
    """The runs suite's name for `make_service`."""
    return make_service


def now() -> datetime:
    return datetime.now(UTC)


async def test_missed_run_beyond_grace_is_told(make_service: Factory, pg_url: str) -> None:
    settings = pg_settings(pg_url, misfire_grace_seconds=600)
    writer = make_service(settings, role="writer")
    await writer.start()
    await writer.create("standup", "站会", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
    await writer.set_next_run_time("standup", now() - timedelta(minutes=20))
    await writer.stop()

    agent, notes = ScriptedAgent(), RecordingNotifier()
    leader = make_service(settings, agent=agent, notifier=notes)
    await leader.start()
    missed = await notes.next()
    assert "错过" in missed.text and "「standup」" in missed.text
    assert agent.runs_of("standup") == 0


async def test_two_replicas_starting_together_fire_each_run_once(make_service: Factory) -> None:
    agents, notes = [ScriptedAgent(), ScriptedAgent()], [RecordingNotifier(), RecordingNotifier()]
    a = make_service(agent=agents[0], notifier=notes[0])
    b = make_service(agent=agents[1], notifier=notes[1])
    await asyncio.gather(a.start(), b.start())  # both create the tables and race for the lease
    assert sorted([a.is_leader, b.is_leader]) == [False, True]
    leader, follower = (a, b) if a.is_leader else (b, a)
    lead_i, follow_i = (0, 1) if a.is_leader else (1, 0)

    await follower.create("once", "hello", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
    await follower.set_next_run_time("once", now())
    await notes[lead_i].next()
    assert await leader.idle(30)
    assert (agents[lead_i].runs_of("once"), agents[follow_i].runs_of("once")) == (1, 0)

    await leader.stop()  # releases the lease: the follower takes over at its next tick
    await follower.set_next_run_time("once", now())
    await notes[follow_i].next()
    assert follower.is_leader and agents[follow_i].runs_of("once") == 1
    assert agents[lead_i].runs_of("once") == 1 and notes[lead_i].about("once")[1:] == []


async def test_job_stores_of_replicas_starting_together_do_not_race(pg_url: str) -> None:
    """Regression: concurrent CREATE TABLE apscheduler_jobs failed on pg_type's unique index."""
    stores = [make_jobstore(pg_url) for _ in range(4)]
    barrier = threading.Barrier(len(stores), timeout=10)

    def start(store: SQLAlchemyJobStore) -> None:
        barrier.wait()  # all four check "does the table exist?" at the same moment
        store.start(AsyncIOScheduler(), "default")

    try:
        await asyncio.gather(*(asyncio.to_thread(start, s) for s in stores))
        assert all(s.get_all_jobs() == [] for s in stores)
    finally:
        for s in stores:
            s.shutdown()


async def test_lease_of_a_dead_replica_expires_and_is_taken_over(
    make_service: Factory, pg_url: str
) -> None:
    db = Database(pg_url)
    try:
        dead = DbLeaderLock(db, "replica-that-died", lease_seconds=1.0)
        assert await dead.acquire()  # and never renews nor releases
        agent, notes = ScriptedAgent(), RecordingNotifier()
        svc = make_service(agent=agent, notifier=notes)
        await svc.start()
        assert not svc.is_leader
        await svc.create("job", "x", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
        await svc.set_next_run_time("job", now())
        await notes.next(timeout=30)  # fired once the dead lease ran out
        assert svc.is_leader and agent.runs_of("job") == 1
        assert not await dead.acquire()
    finally:
        await db.close()
