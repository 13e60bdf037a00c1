"""The inbound journal: atomic claims, leases, crash recovery, retention — SQLite and real Redis."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from larkbot.lark.claims.journal import DAY, MAX_ATTEMPTS, InboundJournal, SqlJournal, inbound
from larkbot.storage.db import Database
from tests.lark_harness import redis_server


@pytest.fixture
async def db(home: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{home}/larkbot.db")
    yield database
    await database.close()


def _journals(kind: str, db: Database, url: str | None, lease: float) -> list[InboundJournal]:
    if kind == "sql":
        return [SqlJournal(db, lease_seconds=lease) for _ in range(2)]
    from larkbot.lark.claims.journal_redis import RedisJournal

    assert url is not None
    return [RedisJournal(url, lease_seconds=lease) for _ in range(2)]


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A redis-server for this test (skipped only when the binary is not installed)."""
    with redis_server(tmp_path) as url:
        yield url


@pytest.fixture(params=["sql", "redis"])
async def pair(request: pytest.FixtureRequest, db: Database) -> AsyncIterator[list[InboundJournal]]:
    """Two journals on the same storage: two replicas (or a process before and after a restart)."""
    url = request.getfixturevalue("redis_url") if request.param == "redis" else None
    journals = _journals(request.param, db, url, lease=30.0)
    for j in journals:
        await j.init()
    yield journals
    for j in journals:
        await j.close()


async def test_claim_is_atomic_across_replicas(pair: list[InboundJournal]) -> None:
    a, b = pair
    results = await asyncio.gather(*(j.claim("om_1", "{}") for j in [a, b, a, b, a, b, a, b]))
    assert sum(results) == 1
    assert await a.status("om_1") == "claimed"


async def test_done_blocks_redelivery_and_recovery(pair: list[InboundJournal]) -> None:
    a, b = pair
    assert await a.claim("om_1", "payload")
    await a.done("om_1")
    await a.release("om_1")  # no effect once done
    assert await a.status("om_1") == "done"
    assert not await b.claim("om_1", "payload")
    assert await b.reclaim_expired() == []


async def test_expired_claim_is_recovered_exactly_once(pair: list[InboundJournal]) -> None:
    a, b = pair
    assert await a.claim("om_1", "the message")
    assert await b.reclaim_expired() == []  # lease still running
    await a.release("om_1")  # what a dying turn does; a crash just lets the lease run out
    got = await asyncio.gather(b.reclaim_expired(), a.reclaim_expired())
    assert sorted(map(len, got)) == [0, 1] and [p for g in got for p in g] == ["the message"]
    assert not await b.claim("om_1", "again")  # the new lease is alive


async def test_lease_runs_out_without_release(db: Database) -> None:
    a, b = SqlJournal(db, lease_seconds=0.05), SqlJournal(db, lease_seconds=0.05)
    await a.init()
    assert await a.claim("om_1", "p")
    deadline = time.monotonic() + 5
    while not (won := await b.reclaim_expired()):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    assert won == ["p"]


async def test_renew_keeps_the_lease_and_only_the_owner_may(pair: list[InboundJournal]) -> None:
    a, b = pair
    assert await a.claim("om_1", "p")
    await b.release("om_1")  # not b's claim: ignored
    assert await b.reclaim_expired() == []
    await a.renew("om_1")
    assert await b.reclaim_expired() == []


async def test_poison_message_is_given_up(db: Database) -> None:
    j = SqlJournal(db, lease_seconds=30)
    await j.init()
    assert await j.claim("om_1", "p")
    for _ in range(MAX_ATTEMPTS - 1):
        await j.release("om_1")
        assert await j.reclaim_expired() == ["p"]
    await j.release("om_1")
    assert await j.reclaim_expired() == []
    assert await j.status("om_1") == "failed"


async def test_purge_keeps_a_day(db: Database) -> None:
    j = SqlJournal(db, retention_seconds=60)  # asked for less: clamped to 24 h
    await j.init()
    assert j.retention_seconds >= DAY
    await j.claim("old", "p")
    await j.claim("new", "p")
    with sqlite3.connect(j.path) as conn:
        conn.execute(
            "UPDATE lark_inbound SET created_at = ? WHERE message_id = 'old'",
            (time.time() - 2 * DAY,),
        )
    assert await j.purge() == 1
    assert await j.status("old") is None and await j.status("new") == "claimed"


async def test_released_claim_survives_purge(pair: list[InboundJournal]) -> None:
    # Regression: Redis scored a released claim 0 in its pending index, so the hourly purge
    # (index members older than the retention) dropped it and no replica ever recovered it.
    a, b = pair
    assert await a.claim("om_1", "the message")
    await a.release("om_1")
    await b.purge()
    assert await b.reclaim_expired() == ["the message"]


async def test_storage_errors_do_not_carry_message_text(db: Database) -> None:
    # Regression: SQLAlchemy put the bound parameters (the journal payload: the user's message)
    # into its error text, which `lark_claim_failed` / `lark_submit_failed` log in full.
    import sqlalchemy as sa

    await db.create(inbound)  # the PostgreSQL journal's table, on the shared engine
    row = dict(message_id="om_1", status="claimed", owner="o", lease_until=0.0, attempts=1)
    row |= dict(payload="my private words", created_at=0.0, updated_at=0.0)
    async with db.engine.begin() as conn:
        await conn.execute(sa.insert(inbound).values(**row))
    with pytest.raises(sa.exc.IntegrityError) as err:
        async with db.engine.begin() as conn:
            await conn.execute(sa.insert(inbound).values(**row))
    assert "my private words" not in str(err.value)


async def test_takeover_from_a_live_holder_is_forgiven(pair: list[InboundJournal]) -> None:
    # A holder that finds its claim retaken (it was starved, not dead) forgives the takeover:
    # the message is retaken from live holders more than MAX_ATTEMPTS times and never fails.
    a, b = pair
    assert await a.claim("om_1", "p")
    for holder, taker in [(a, b), (b, a)] * MAX_ATTEMPTS:
        await holder.release("om_1")  # its lease lapsed
        assert await taker.reclaim_expired() == ["p"]
        assert not await holder.renew("om_1")  # the journal tells the holder it lost it
        await holder.forgive_attempt("om_1")
    assert await a.status("om_1") == "claimed"
    await a.done("om_1")
    await a.forgive_attempt("om_1")  # no effect once done
    assert await a.status("om_1") == "done"


async def test_reclaim_leaves_the_claims_running_here_alone(pair: list[InboundJournal]) -> None:
    # A replica busy past its lease must not take over (and count an attempt against) its own
    # running turn, nor give it up: the next renewal extends the lease.
    a, b = pair
    for message_id in ("om_1", "om_2"):
        assert await a.claim(message_id, message_id)
        await a.release(message_id)
    for _ in range(MAX_ATTEMPTS + 1):
        assert await a.reclaim_expired(exclude={"om_1", "om_2"}) == []
    assert await a.renew("om_1") and await a.status("om_1") == "claimed"
    assert await b.reclaim_expired() == ["om_2"]  # another replica still may


async def renew_many_keeps_only_the_held(a: InboundJournal, b: InboundJournal) -> None:
    """A mix of held, retaken, answered and unknown claims: exactly the held ones are renewed.
    (Also run on PostgreSQL by tests/test_postgres_stores.py.)"""
    for message_id in ("om_held", "om_taken", "om_done"):
        assert await a.claim(message_id, message_id)
    await a.release("om_taken")
    assert await b.reclaim_expired() == ["om_taken"]  # b holds it now ...
    await b.release("om_taken")  # ... and its lease ran out: a's renewal must not revive it
    await a.release("om_held")  # a's lease ran out too, but nobody took the claim: still a's
    await a.done("om_done")
    ids = ["om_held", "om_taken", "om_done", "om_unknown"]
    assert await a.renew_many(ids) == {"om_held"}
    assert await b.reclaim_expired() == ["om_taken"]  # om_held's lease runs again, only it
    assert await a.status("om_unknown") is None and await a.status("om_done") == "done"
    assert await a.renew_many([]) == set()


async def test_renew_many_keeps_only_the_held(pair: list[InboundJournal]) -> None:
    await renew_many_keeps_only_the_held(*pair)


async def claim_all(journal: InboundJournal, count: int) -> list[str]:
    """`count` claims at once; returns their ids."""
    ids = [f"om_{i}" for i in range(count)]
    assert all(await asyncio.gather(*(journal.claim(m, "{}") for m in ids)))
    return ids


async def test_a_burst_beyond_the_connection_pool_is_claimed(pair: list[InboundJournal]) -> None:
    """300 claims at once: Redis's default pool (100 connections) refused the rest at once."""
    ids = await claim_all(pair[0], 300)
    assert [await pair[1].status(m) for m in ids] == ["claimed"] * 300


def wal_commits(db_file: Path) -> int:
    """Transactions in the database's write-ahead log: frames of the log's current generation
    (their salts match its header) that end a commit (https://sqlite.org/fileformat2.html)."""
    wal = db_file.with_name(db_file.name + "-wal").read_bytes()
    page_size, salts = int.from_bytes(wal[8:12], "big"), wal[16:24]
    commits = 0
    for at in range(32, len(wal) - 24, 24 + page_size):
        if wal[at + 8 : at + 16] != salts:
            break  # an older generation's frame: the log ends here
        commits += int.from_bytes(wal[at + 4 : at + 8], "big") != 0  # the size after a commit
    return commits


async def test_renew_many_is_one_sqlite_transaction(db: Database) -> None:
    journal = SqlJournal(db, lease_seconds=30)
    await journal.init()
    try:
        ids = await claim_all(journal, 300)
        before = wal_commits(journal.path)
        assert await journal.renew_many(ids) == set(ids)
        assert wal_commits(journal.path) == before + 1
        for message_id in ids[:3]:  # what the heartbeat did before: a commit each
            assert await journal.renew(message_id)
        assert wal_commits(journal.path) == before + 4
    finally:
        await journal.close()


async def test_renew_many_is_one_redis_call(redis_url: str) -> None:
    import redis.asyncio as redis

    from larkbot.lark.claims.journal_redis import RedisJournal

    journal, client = RedisJournal(redis_url, lease_seconds=30), redis.from_url(redis_url)
    await journal.init()
    try:
        ids = await claim_all(journal, 300)
        await journal.renew_many(ids[:1])  # loads the script (EVALSHA, SCRIPT LOAD, EVALSHA)
        before = await client.info("commandstats")
        assert await journal.renew_many(ids) == set(ids)
        after = await client.info("commandstats")
        calls = {k: v["calls"] - before.get(k, {"calls": 0})["calls"] for k, v in after.items()}
        called = {k.removeprefix("cmdstat_"): n for k, n in calls.items() if n}
        inside_the_script = {"hmget": 300, "hset": 300, "zadd": 300}  # counted by Redis too
        assert called == {"evalsha": 1, "info": 1, **inside_the_script}
    finally:
        await journal.close()
        await client.aclose()
