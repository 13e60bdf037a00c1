"""Group commit: concurrent claims share transactions, duplicates are still refused, and a failed
transaction fails only its own waiters (the webhook then answers 503 so Lark redelivers)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from larkbot.lark.claims.journal import SqlJournal
from larkbot.storage.db import Database
from larkbot.storage.group_commit import GroupCommit, StorageUnavailable
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, message_event, settings_for


async def test_concurrent_submits_share_few_flushes() -> None:
    groups: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        groups.append(items)
        await asyncio.sleep(0)  # a commit takes a while; more arrive meanwhile
        return [i * 2 for i in items]

    batcher: GroupCommit[int, int] = GroupCommit(flush, "test")
    assert await asyncio.gather(*(batcher.submit(i) for i in range(300))) == [
        i * 2 for i in range(300)
    ]
    assert sorted(i for g in groups for i in g) == list(range(300))
    assert len(groups) <= 3 and batcher.groups == len(groups) and batcher.items == 300
    await batcher.close()


async def test_a_failed_group_fails_only_its_waiters() -> None:
    release = asyncio.Event()

    async def flush(items: list[str]) -> list[str]:
        if "first" in items:
            await release.wait()  # the next group queues up meanwhile
            raise OSError("disk on fire")
        return [f"ok {i}" for i in items]

    batcher: GroupCommit[str, str] = GroupCommit(flush, "journal claim")
    failing = asyncio.create_task(batcher.submit("first"))
    await asyncio.sleep(0.01)
    later = [asyncio.create_task(batcher.submit(f"n{i}")) for i in range(5)]
    await asyncio.sleep(0.01)
    release.set()
    with pytest.raises(StorageUnavailable, match="journal claim not stored: OSError") as err:
        await failing
    assert isinstance(err.value.__cause__, OSError)
    assert await asyncio.gather(*later) == [f"ok n{i}" for i in range(5)]
    assert batcher.groups == 1  # the failed one is not counted
    await batcher.close()


async def test_close_fails_what_is_still_queued() -> None:
    started = asyncio.Event()

    async def flush(items: list[int]) -> list[int]:
        started.set()
        await asyncio.Event().wait()  # never commits
        return items

    batcher: GroupCommit[int, int] = GroupCommit(flush, "test")
    waiter = asyncio.create_task(batcher.submit(1))
    await asyncio.wait_for(started.wait(), 5)
    await batcher.close()
    with pytest.raises(StorageUnavailable, match="closing"):
        await waiter


@pytest.fixture
async def sqlite_db(home: Path) -> AsyncIterator[Database]:
    db = Database(f"sqlite:///{home}/larkbot.db")
    yield db
    await db.close()


async def _claims_in_groups(journal: SqlJournal) -> None:
    """200 claims at once (each message sent 4 times): one winner per message, few commits."""
    await journal.init()
    ids = [f"om_{i}" for i in range(50)]
    won = await asyncio.gather(*(journal.claim(m, f"text {m}") for m in ids * 4))
    winners = [m for m, ok in zip(ids * 4, won, strict=True) if ok]
    assert sorted(winners) == sorted(ids)  # duplicates refused, in a group or across groups
    assert journal.writes.groups <= 20  # not 200 transactions
    assert await journal.backlog() == 50
    assert not await journal.claim("om_1", "again")  # a later redelivery too
    await journal.close()


async def test_sqlite_claims_commit_in_groups(sqlite_db: Database) -> None:
    await _claims_in_groups(SqlJournal(sqlite_db, lease_seconds=30))


async def test_postgres_claims_commit_in_groups(pg_url: str) -> None:
    db = Database(pg_url)
    try:
        await _claims_in_groups(SqlJournal(db, lease_seconds=30))
    finally:
        await db.close()


async def test_claims_renewals_and_answered_marks_share_one_commit(sqlite_db: Database) -> None:
    """Writes of every kind that arrive together commit in one transaction, each with its own
    result: a claim never waits behind a renewal's or an answered mark's separate commit."""
    journal = SqlJournal(sqlite_db, lease_seconds=30)
    await journal.init()
    assert await journal.claim("om_a", "a") and await journal.claim("om_b", "b")
    before = journal.writes.groups
    results = await asyncio.gather(
        journal.claim("om_c", "c"),
        journal.claim("om_a", "a again"),  # a redelivery: refused
        journal.renew("om_a"),
        journal.done("om_b"),
        journal.renew("om_unknown"),  # nobody's claim: not renewed
    )
    assert results == [True, False, True, None, False]
    assert journal.writes.groups == before + 1
    assert [await journal.status(m) for m in ("om_a", "om_b", "om_c")] == [
        "claimed",
        "done",
        "claimed",
    ]
    await journal.close()


async def test_sqlite_journal_adopts_the_old_table(sqlite_db: Database) -> None:
    """Entries an earlier version kept in larkbot.db move to the journal's file on start."""
    import sqlalchemy as sa

    from larkbot.lark.claims.journal import inbound

    await sqlite_db.create(inbound)
    row = dict(status="claimed", owner="gone", lease_until=0.0, attempts=1, payload="p")
    async with sqlite_db.engine.begin() as conn:
        await conn.execute(
            sa.insert(inbound).values(message_id="om_old", **row, created_at=1e10, updated_at=0.0)
        )
    journal = SqlJournal(sqlite_db, lease_seconds=30)
    await journal.init()
    assert await journal.reclaim_expired() == ["p"]  # the unfinished claim is recovered
    async with sqlite_db.engine.connect() as conn:
        tables = await conn.run_sync(lambda c: sa.inspect(c).get_table_names())
    assert "lark_inbound" not in tables
    await journal.close()


async def test_storage_failure_answers_503_and_the_redelivery_is_answered(
    pg_url: str, home: Path
) -> None:
    """The claim cannot be stored (its table is gone for a moment): that event gets a 503, not a
    200 — Lark redelivers it — and the redelivery is claimed and answered exactly once."""
    import asyncpg

    async with FakeLark() as lark, FakeLLM() as llm:
        settings = settings_for(home, lark.domain, llm.base_url, storage={"url": pg_url})
        async with Served(settings) as served:
            event = message_event("hi", message_id="om_retry")
            assert (await served.post_event(message_event("warm up")))[0] == 200
            await lark.wait_for(lambda: len(lark.sent) == 1, timeout=30)
            assert await served.app.idle(30)
            admin = await asyncpg.connect(pg_url)
            try:
                await admin.execute("ALTER TABLE lark_inbound RENAME TO lark_inbound_away")
                status, body = await served.post_event(event)
                await admin.execute("ALTER TABLE lark_inbound_away RENAME TO lark_inbound")
            finally:
                await admin.close()
            assert (status, body) == (503, {"msg": "temporarily unavailable"})
            assert (await served.post_event(event))[0] == 200  # Lark's redelivery
            await lark.wait_for(lambda: len(lark.sent) >= 2, timeout=30)
            assert await served.app.idle(30)
    assert sorted(m["reply_to"] for m in lark.sent).count("om_retry") == 1


async def test_sqlite_claim_never_blocks_the_loop_on_a_locked_file(sqlite_db: Database) -> None:
    """Another process holds the journal's write lock: the claim waits on the journal's thread
    (the loop keeps running) and commits once the lock is free."""
    import sqlite3

    journal = SqlJournal(sqlite_db, lease_seconds=30)
    await journal.init()
    other = sqlite3.connect(journal.path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    claim = asyncio.create_task(journal.claim("om_locked", "p"))
    ticks = 0
    while ticks < 20:  # the loop is free while the claim waits
        await asyncio.sleep(0.005)
        ticks += 1
    assert not claim.done()
    other.execute("ROLLBACK")
    assert await asyncio.wait_for(claim, 10)
    assert await journal.status("om_locked") == "claimed"
    other.close()
    await journal.close()


async def test_a_claim_past_the_ack_deadline_gets_503_then_counts_once(home: Path) -> None:
    """The journal's file is locked past the 2 s ack deadline: the webhook answers 503 (Lark
    redelivers); the claim lands once the lock is free, its turn answers once, and Lark's
    redelivery is acknowledged as a duplicate."""
    import sqlite3

    async with FakeLark() as lark, FakeLLM() as llm:
        served = Served(settings_for(home, lark.domain, llm.base_url))
        async with served:
            assert (await served.post_event(message_event("warm up")))[0] == 200
            await lark.wait_for(lambda: len(lark.sent) == 1, timeout=30)
            journal = served.app.journal
            assert isinstance(journal, SqlJournal) and journal.path
            other = sqlite3.connect(journal.path, isolation_level=None, check_same_thread=False)
            other.execute("BEGIN IMMEDIATE")
            event = message_event("hi", message_id="om_late")
            try:
                status, body = await served.post_event(event)
            finally:
                other.execute("ROLLBACK")
                other.close()
            assert (status, body) == (503, {"msg": "temporarily unavailable"})
            assert (await served.post_event(event))[0] == 200  # Lark's redelivery
            await lark.wait_for(lambda: len(lark.sent) >= 2, timeout=30)
            assert await served.app.idle(30)
    assert [m["reply_to"] for m in lark.sent].count("om_late") == 1
