"""Each tick's durable record (`scheduler/runs.py`, `recovery.py`): claimed once, done once.

Two leaders for a moment (a lease changing hands) fire a tick once; a tick's row says done
after its message; and what a dead replica leaves — an open row whose lease ran out — is re-run
once by the leader, reported as failed after three starts, as missed when far too late, and
dropped with its job. The dead replica's row is written as it would have left it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from larkbot.scheduler import ScheduleService
from larkbot.scheduler.delivery import message_uuid
from larkbot.scheduler.runs import RunKey, scheduler_runs
from larkbot.storage.db import Database
from tests.fakes.schedule import (
    LARK_TARGET,
    OWNER,
    RecordingNotifier,
    ScriptedAgent,
    scheduler_settings,
    service_factory,
)

FIRE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
async def factory(home: Path) -> AsyncIterator[Callable[..., ScheduleService]]:
    """ScheduleServices on one SQLite file, 1 s leases, 0.1 s polls."""
    async with service_factory(lambda: scheduler_settings(home), 0.1) as make:
        yield make


@contextlib.asynccontextmanager
async def _database(svc: ScheduleService) -> AsyncIterator[Database]:
    """The service's database, opened on its own (as another replica or an operator would)."""
    db = Database(svc.settings.storage.url)
    try:
        yield db
    finally:
        await db.close()


async def _rows(svc: ScheduleService) -> list[Any]:
    t = scheduler_runs
    async with _database(svc) as db, db.engine.connect() as conn:
        return list((await conn.execute(sa.select(t).order_by(t.c.fire_us))).all())


async def _left_by_a_dead_replica(svc: ScheduleService, attempts: int, lease_ago: float) -> None:
    """The row a replica killed mid-run leaves: claimed, lease run out, not done."""
    async with _database(svc) as db, db.engine.begin() as conn:
        await conn.execute(
            sa.insert(scheduler_runs).values(
                job_id="daily",
                fire_us=RunKey.of("daily", FIRE).fire_us,
                holder="dead-replica",
                lease_until=time.time() - lease_ago,
                attempts=attempts,
            )
        )


async def _leader(factory: Callable[..., ScheduleService]) -> tuple[ScheduleService, Any, Any]:
    agent, notes = ScriptedAgent(), RecordingNotifier()
    svc = factory(agent=agent, notifier=notes)
    await svc.start()
    assert svc.is_leader
    await svc.create("daily", "report", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
    return svc, agent, notes


async def test_two_leaders_at_once_run_a_tick_once(factory: Callable[..., Any]) -> None:
    agents, notes = [ScriptedAgent(), ScriptedAgent()], [RecordingNotifier(), RecordingNotifier()]
    a = factory(agent=agents[0], notifier=notes[0])
    b = factory(agent=agents[1], notifier=notes[1])
    await a.start()
    await b.start()
    await a.create("tick", "p", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
    a.follow()
    await a.set_next_run_time("tick", datetime.now(UTC))
    b.lead()  # as when b took an expired lease while a had not noticed yet
    a.lead()
    async with asyncio.timeout(30):
        while not (notes[0].sent or notes[1].sent):
            await asyncio.sleep(0.01)  # poll interval of a bounded wait
    a.poll()  # one more wakeup pass each: the tick is claimed and done, nothing runs again
    b.poll()
    assert await a.idle(30) and await b.idle(30)
    assert len(notes[0].sent) + len(notes[1].sent) == 1
    assert agents[0].runs_of("tick") + agents[1].runs_of("tick") == 1
    [row] = await _rows(a)
    assert row.attempts == 1 and row.done_at is not None  # marked done after its message


async def test_a_dead_replicas_run_is_rerun_once_with_the_ticks_uuid(
    factory: Callable[..., Any],
) -> None:
    svc, agent, notes = await _leader(factory)
    await _left_by_a_dead_replica(svc, attempts=1, lease_ago=1.0)
    sent = await notes.next(timeout=30)
    assert await svc.idle(30)
    assert agent.runs_of("daily") == 1 and len(notes.sent) == 1
    assert sent.uuid == message_uuid("daily", FIRE)  # what the dead run would have sent
    [row] = await _rows(svc)
    assert (row.holder, row.attempts) == (svc.id, 2) and row.done_at is not None


async def test_a_run_that_killed_three_replicas_is_reported_failed(
    factory: Callable[..., Any],
) -> None:
    svc, agent, notes = await _leader(factory)
    await _left_by_a_dead_replica(svc, attempts=3, lease_ago=1.0)
    sent = await notes.next(timeout=30)
    assert "运行失败" in sent.text and "3 次中途退出" in sent.text
    assert agent.runs_of("daily") == 0  # not a fourth time
    assert await svc.idle(30)
    [row] = await _rows(svc)
    assert row.done_at is not None


async def test_a_run_found_long_after_its_lease_is_reported_missed(
    factory: Callable[..., Any], home: Path
) -> None:
    svc, agent, notes = await _leader(factory)
    grace = svc.settings.scheduler.misfire_grace_seconds
    await _left_by_a_dead_replica(svc, attempts=1, lease_ago=grace + 60)
    sent = await notes.next(timeout=30)
    assert "错过了" in sent.text and agent.runs_of("daily") == 0
    assert await svc.idle(30)
    [row] = await _rows(svc)
    assert row.done_at is not None


async def test_a_removed_jobs_open_run_is_dropped(factory: Callable[..., Any]) -> None:
    svc, agent, notes = await _leader(factory)
    assert await svc.remove("daily")
    await _left_by_a_dead_replica(svc, attempts=1, lease_ago=1.0)
    for _ in range(100):  # bounded: the keeper looks every third of the 1 s lease
        if (await _rows(svc))[0].done_at is not None:
            break
        await notes_none(notes)
    assert (await _rows(svc))[0].done_at is not None
    assert notes.sent == [] and agent.runs_of("daily") == 0


async def notes_none(notes: RecordingNotifier) -> None:
    """Wait a little for a message that must not come (bounded)."""
    with pytest.raises(TimeoutError):
        await notes.next(timeout=0.05)


def test_run_keys_are_exact_to_the_microsecond() -> None:
    key = RunKey.of("daily", FIRE + timedelta(microseconds=7))
    assert key.fire_us % 1_000_000 == 7
    assert key.fire_time(UTC) == FIRE + timedelta(microseconds=7)


class _HangingAgent:
    """An agent whose turn never ends by itself; notes when it started and when it was stopped."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()

    async def __call__(self, session_id: str, user_input: str, ctx: Any) -> Any:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.stopped.set()


async def test_a_run_whose_claim_was_retaken_stops_without_posting(
    factory: Callable[..., Any],
) -> None:
    agent, notes = _HangingAgent(), RecordingNotifier()
    svc = factory(agent=agent, notifier=notes)
    await svc.start()
    await svc.create("slow", "p", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
    await svc.set_next_run_time("slow", datetime.now(UTC))
    await asyncio.wait_for(agent.started.wait(), 30)
    async with _database(svc) as db, db.engine.begin() as conn:  # what the re-taker writes
        await conn.execute(
            sa.update(scheduler_runs)
            .where(scheduler_runs.c.job_id == "slow")
            .values(holder="other")
        )
    await asyncio.wait_for(agent.stopped.wait(), 30)  # at the next renewal (a third of 1 s)
    assert await svc.idle(30)
    assert notes.sent == []  # the replica that holds the claim now delivers, not this one
    [row] = await _rows(svc)
    assert (row.holder, row.done_at) == ("other", None)
