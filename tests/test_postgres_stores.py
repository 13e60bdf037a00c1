"""The shared stores on a real PostgreSQL: sessions, the exactly-once journal, owners, audit.

Each test gets a fresh database (the `pg_url` fixture); `make test` provides LARKBOT_TEST_PG_URL.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from larkbot.errors import ConfigError
from larkbot.lark.approvals.audit import AuditLog
from larkbot.lark.claims.journal import DAY, MAX_ATTEMPTS, SqlJournal, inbound
from larkbot.lark.owners import Owners
from larkbot.scheduler.store import make_jobstore
from larkbot.storage.db import Database, async_url, safe_url, sync_url
from larkbot.storage.sessions import SessionStore, message_chars, repair
from tests.test_lark_journal import claim_all, renew_many_keeps_only_the_held


@pytest.fixture
async def db(pg_url: str) -> AsyncIterator[Database]:
    """A Database on this test's fresh PostgreSQL database."""
    database = Database(pg_url)
    assert not database.is_sqlite
    yield database
    await database.close()


def call_round(i: int, size: int = 10) -> list[dict]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": "r" * size},
    ]


async def test_sessions_append_load_trim_and_restart(pg_url: str, db: Database) -> None:
    store = SessionStore(db)
    await store.init()
    await store.init()  # idempotent, as on every start
    await store.append("lark:a", [{"role": "user", "content": "你好 🐦"}, *call_round(1)])
    await store.append("lark:b", [{"role": "user", "content": "other"}])
    for turn in range(10):
        rows = [{"role": "user", "content": f"q{turn}"}, *call_round(turn, 300)]
        await store.append("long", [*rows, {"role": "assistant", "content": f"a{turn}"}])
    await db.close()

    db2 = Database(pg_url)  # a restart, or another replica
    try:
        store2 = SessionStore(db2)
        await store2.init()
        loaded = await store2.load("lark:a")
        assert loaded[0] == {"role": "user", "content": "你好 🐦"} and len(loaded) == 3
        kept = await store2.load("long", max_chars=2000)
        assert sum(message_chars(m) for m in kept) <= 2000
        assert kept[0]["role"] == "user" and kept[-1] == {"role": "assistant", "content": "a9"}
        assert repair(kept) == kept and len(kept) < len(await store2.load("long"))
        infos = await store2.list_sessions("lark:")
        assert [i.session_id for i in infos] == ["lark:b", "lark:a"]  # newest write first
        assert [i.messages for i in infos] == [1, 3]
        assert [i.session_id for i in await store2.list_sessions("lark_")] == []  # no LIKE _
        await store2.clear("lark:a")
        assert await store2.load("lark:a") == [] and len(await store2.load("lark:b")) == 1
    finally:
        await db2.close()


async def test_journal_claim_is_exactly_once_under_20_concurrent_claims(db: Database) -> None:
    replicas = [SqlJournal(db, lease_seconds=30) for _ in range(4)]
    await asyncio.gather(*(j.init() for j in replicas))  # replicas start together
    results = await asyncio.gather(*(replicas[i % 4].claim("om_1", "{}") for i in range(20)))
    assert sum(results) == 1
    assert await replicas[0].status("om_1") == "claimed"


async def test_journal_group_keeps_each_payload_exactly(db: Database) -> None:
    # A group travels as one JSON parameter: what a payload holds must not change on the way
    journal = SqlJournal(db, lease_seconds=30)
    await journal.init()
    payloads = ['{"text":"say \\"hi\\" \\\\ \\u0000"}', "你好 🐦\n\ttabs", "", "x" * 20_000]
    try:
        won = await asyncio.gather(*(journal.claim(f"om_{i}", p) for i, p in enumerate(payloads)))
        assert won == [True] * len(payloads)
        assert journal.writes.groups == 1  # all four in one statement
        for i in range(len(payloads)):
            await journal.release(f"om_{i}")
        assert sorted(await journal.reclaim_expired()) == sorted(payloads)
    finally:
        await journal.close()


async def test_journal_expired_lease_is_reclaimed_once(db: Database) -> None:
    a = SqlJournal(db, lease_seconds=0.05)  # the replica whose lease runs out
    b, c = (SqlJournal(db, lease_seconds=30) for _ in range(2))  # a loaded machine cannot
    await a.init()  # let b's claim lapse before c tries (a flake under 8 parallel suites)
    assert await a.claim("om_1", "the message")
    deadline = time.monotonic() + 30
    while not (won := await b.claim("om_1", "redelivered")):  # a redelivery after the lease
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)  # polling a wall-clock lease, bounded by the deadline
    assert won and not await c.claim("om_1", "again")
    await b.done("om_1")  # finished: its short lease must not make it reclaimable below

    assert await b.claim("om_2", "crashed turn")
    await b.release("om_2")  # a dying turn gives its lease up
    got = await asyncio.gather(a.reclaim_expired(), c.reclaim_expired())
    assert sorted(map(len, got)) == [0, 1] and [p for g in got for p in g] == ["crashed turn"]


async def test_journal_done_purge_and_poison(db: Database) -> None:
    j = SqlJournal(db, lease_seconds=30)
    await j.init()
    assert await j.claim("om_done", "p")
    await j.done("om_done")
    assert await j.status("om_done") == "done"
    assert not await j.claim("om_done", "p") and await j.reclaim_expired() == []

    assert await j.claim("om_poison", "p")
    for _ in range(MAX_ATTEMPTS - 1):
        await j.release("om_poison")
        assert await j.reclaim_expired() == ["p"]
    await j.release("om_poison")
    assert await j.reclaim_expired() == [] and await j.status("om_poison") == "failed"

    async with db.engine.begin() as conn:
        await conn.execute(
            sa.update(inbound)
            .where(inbound.c.message_id == "om_done")
            .values(created_at=time.time() - 2 * DAY)
        )
    assert await j.purge() == 1
    assert await j.status("om_done") is None and await j.status("om_poison") == "failed"


async def test_journal_renew_many_keeps_only_the_held(db: Database) -> None:
    a, b = SqlJournal(db, lease_seconds=30), SqlJournal(db, lease_seconds=30)
    await a.init()
    try:
        await renew_many_keeps_only_the_held(a, b)
    finally:
        await a.close()
        await b.close()


async def test_journal_renews_300_leases_in_one_statement(db: Database) -> None:
    journal = SqlJournal(db, lease_seconds=30)
    await journal.init()
    statements: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    try:
        ids = await claim_all(journal, 300)
        sa.event.listen(journal.db.engine, "before_cursor_execute", seen)
        assert await journal.renew_many(ids) == set(ids)
        assert len(statements) == 1 and statements[0].lstrip().startswith("UPDATE lark_inbound")
        assert await journal.renew(ids[0])  # the per-message way: a statement each
        assert len(statements) == 2
    finally:
        sa.event.remove(journal.db.engine, "before_cursor_execute", seen)
        await journal.close()


async def test_owner_claim_persists_and_a_second_claim_is_refused(pg_url: str) -> None:
    dbs = [Database(pg_url) for _ in range(3)]
    try:
        a, b = Owners(dbs[0], []), Owners(dbs[1], [])
        await asyncio.gather(a.init(), b.init())  # two replicas: one pairing code, shared
        assert a.pairing_code and a.pairing_code == b.pairing_code
        results = await asyncio.gather(
            a.claim("ou_alice", a.pairing_code, is_dm=True),
            b.claim("ou_bob", b.pairing_code, is_dm=True),
        )
        assert sorted(r.ok for r in results) == [False, True]
        winner = "ou_alice" if results[0].ok else "ou_bob"
        assert await a.check(winner) and await b.check(winner)
        loser = a if not results[0].ok else b
        again = await loser.claim("ou_eve", "00000000", is_dm=True)
        assert not again.ok and "already has an owner" in again.message

        restarted = Owners(dbs[2], [])
        await restarted.init()
        assert [e.open_id for e in await restarted.all()] == [winner]
        assert restarted.pairing_code is None
    finally:
        for d in dbs:
            await d.close()


async def test_audit_record_and_recent(db: Database) -> None:
    audit = AuditLog(db)
    await audit.init()
    try:
        audit.record("ou_guest", "oc_1", "shell", {"command": "rm -rf /"}, False, "owner only")
        audit.record("ou_owner", "oc_1", "shell", {"command": "ls"}, True, "owner")
        latest, first = await audit.recent()
        assert (latest.sender, latest.allowed, first.sender, first.allowed) == (
            "ou_owner",
            True,
            "ou_guest",
            False,
        )
        assert isinstance(first.allowed, bool) and first.reason == "owner only"
        assert len(first.args_digest) == 64 and first.ts <= latest.ts
        assert [e.tool for e in await audit.recent(limit=1)] == ["shell"]
    finally:
        await audit.close()


async def test_replicas_creating_tables_together_do_not_race(pg_url: str) -> None:
    """Regression: concurrent `Database.create` failed on pg_type's unique index."""
    dbs = [Database(pg_url) for _ in range(4)]
    try:
        await asyncio.gather(*(SessionStore(d).init() for d in dbs))
        await asyncio.gather(*(SqlJournal(d).init() for d in dbs))
        assert await SessionStore(dbs[0]).list_sessions() == []
    finally:
        for d in dbs:
            await d.close()


def test_missing_driver_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: without the postgres extra, Database() died with a bare ModuleNotFoundError."""
    monkeypatch.setitem(sys.modules, "asyncpg", None)  # as if larkbot[postgres] were not installed
    with pytest.raises(ConfigError, match=r"asyncpg.*larkbot\[postgres\]"):
        Database("postgresql://bot@127.0.0.1/larkbot")


async def test_pooled_connections_killed_by_the_server_are_replaced(
    pg_url: str, db: Database
) -> None:
    """Regression: after a server restart or idle kill, the next query failed on a dead conn."""
    store = SessionStore(db)
    await store.init()
    await store.append("s", [{"role": "user", "content": "x"}])
    admin = Database(pg_url)
    try:
        async with admin.engine.connect() as conn:  # as an operator would: kill the others
            killed = await conn.scalar(
                sa.text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
    finally:
        await admin.close()
    assert killed == 1  # the pooled connection `store` used
    assert await store.load("s") == [{"role": "user", "content": "x"}]


@pytest.mark.parametrize("tls", ["sslmode", "ssl"])
async def test_tls_parameter_works_for_both_drivers(pg_url: str, tls: str) -> None:
    """Regression: `?sslmode=` broke asyncpg and `?ssl=` broke psycopg2 (the job store)."""
    url = f"{pg_url}?{tls}=disable"  # the test server has no TLS; the spelling is what matters
    db = Database(url)
    try:
        await SessionStore(db).init()
    finally:
        await db.close()
    store = make_jobstore(url)
    try:
        store.start(AsyncIOScheduler(), "default")
        assert store.get_all_jobs() == []
    finally:
        store.shutdown()


def test_url_helpers_mask_passwords_and_translate_tls() -> None:
    url = "postgresql://bot:pa55@db.internal:5432/larkbot?sslmode=require"
    assert safe_url(url) == "postgresql://bot:***@db.internal:5432/larkbot?sslmode=require"
    assert safe_url("sqlite:////data/larkbot.db") == "sqlite:////data/larkbot.db"
    assert async_url(url).endswith("/larkbot?ssl=require")
    assert sync_url(url.replace("sslmode=", "ssl=")).endswith("/larkbot?sslmode=require")


async def test_feedback_is_stored_once_per_person_answer_and_kind(db: Database) -> None:
    from larkbot.storage.feedback import Feedback, FeedbackStore

    store = FeedbackStore(db)
    await store.init()
    await store.init()  # idempotent, as on every start
    up = Feedback("om_a1", "ou_ann", "up", "lark:oc_1", "om_q1", "oc_1", time.time())
    assert await store.record(up)
    assert not await store.record(up)  # a redelivered event
    assert await store.record(
        Feedback("om_a1", "ou_bob", "down", "lark:oc_1", "om_q1", "oc_1", 1.0)
    )
    assert await store.counts("lark:oc_1") == {"up": 1, "down": 1}
    assert await store.counts("lark:oc_other") == {"up": 0, "down": 0}
