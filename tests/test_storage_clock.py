"""Replicas whose clocks disagree: leases and deadlines go by the shared storage's clock.

Replica "ahead" runs its host clock 5 minutes fast (the `StorageClock.local` seam). It must not
take over a live claim of a replica in time, nor write leases that outlive it by 5 minutes;
nor see a live approval or the scheduler's leader lease as expired.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from larkbot.lark.approvals.approval_store import ApprovalStore
from larkbot.lark.claims.journal import InboundJournal, SqlJournal
from larkbot.lark.claims.journal_redis import RedisJournal
from larkbot.scheduler.leader import DbLeaderLock
from larkbot.storage.clock import StorageClock
from larkbot.storage.db import Database
from larkbot.storage.signals import LocalSignal
from tests.lark_harness import redis_server

SKEW = 300.0


def ahead() -> float:
    return time.time() + SKEW


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as url:
        yield url


@pytest.fixture
async def databases(pg_url: str) -> AsyncIterator[tuple[Database, Database]]:
    """Two replicas' handles on one PostgreSQL; the second one's host clock is ahead."""
    in_time, fast = Database(pg_url), Database(pg_url)
    fast.clock.local = ahead
    yield in_time, fast
    await in_time.close()
    await fast.close()


async def test_clock_offset_is_measured_against_the_storage() -> None:
    async def storage_time() -> float:
        return time.time()

    clock = StorageClock(storage_time, local=ahead)
    await clock.sync()
    assert abs(clock.now() - time.time()) < 1.0
    assert abs(StorageClock(local=ahead).now() - ahead()) < 1.0  # SQLite: one host, no offset


async def skewed_replicas_agree(in_time: InboundJournal, fast: InboundJournal) -> None:
    """`in_time` leases for 30 s, `fast` (5 minutes ahead) for 0.3 s."""
    assert await in_time.claim("om_live", "live")
    assert not await fast.claim("om_live", "again")  # a redelivery to the fast replica
    assert await fast.reclaim_expired() == []  # the live lease is not stolen
    assert await fast.claim("om_dead", "dead")  # then the fast replica dies
    deadline = time.monotonic() + 30
    while not (won := await in_time.reclaim_expired()):  # its lease runs out in 0.3 s
        assert time.monotonic() < deadline, "a dead replica's lease outlived it"
        await asyncio.sleep(0.05)
    assert won == ["dead"]


async def test_redis_journal_leases_use_redis_time(redis_url: str) -> None:
    in_time = RedisJournal(redis_url, lease_seconds=30)
    fast = RedisJournal(redis_url, lease_seconds=0.3)
    fast.clock.local = ahead
    for journal in (in_time, fast):
        await journal.init()
    try:
        await skewed_replicas_agree(in_time, fast)
    finally:
        await in_time.close()
        await fast.close()


async def test_postgres_journal_leases_use_the_database_time(
    databases: tuple[Database, Database],
) -> None:
    in_time = SqlJournal(databases[0], lease_seconds=30)
    fast = SqlJournal(databases[1], lease_seconds=0.3)
    for journal in (in_time, fast):
        await journal.init()
    try:
        await skewed_replicas_agree(in_time, fast)
    finally:
        await in_time.close()
        await fast.close()


async def test_approval_and_leader_lease_use_the_database_time(
    databases: tuple[Database, Database],
) -> None:
    in_time, fast = databases
    asker, clicker = ApprovalStore(in_time, LocalSignal()), ApprovalStore(fast, LocalSignal())
    await asker.init()
    await asker.open("ap_1", "shell", "rm -rf x", {}, "ou_owner", timeout=60)
    assert await clicker.answer("ap_1", "approved", "ou_owner")  # in time, by the database
    leader = DbLeaderLock(in_time, "replica-a", lease_seconds=30)
    assert await leader.acquire()
    assert not await DbLeaderLock(fast, "replica-b", lease_seconds=30).acquire()
