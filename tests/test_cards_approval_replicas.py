"""Approval cards across replicas: the turn waits on one App, the click lands on another.

Two App instances (each behind its own HTTP server, as two `serve` replicas) share one
database: PostgreSQL (LISTEN/NOTIFY wakes the waiter), SQLite + Redis (pub/sub), or SQLite
alone (the waiter re-reads its row every 0.5 s). The first click wins wherever it lands; a
second one, a stranger's and a late one get a clear answer on either replica.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from larkbot.lark.approvals.approval_store import ApprovalStore
from larkbot.storage.db import Database
from larkbot.storage.signals import APPROVAL_CHANNEL, PostgresSignal, RedisSignal, Signal
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, message_event, redis_server
from tests.test_cards_approval_e2e import approval_cards, approval_id_of, post_click, setup

# Only the signal wakes the waiter before its 30 s re-read; a loaded machine still answers
# well within this bound.
WOKEN_WITHIN = 20


@asynccontextmanager
async def replicas(
    home: Path,
    lark: FakeLark,
    llm: FakeLLM,
    then: str = "Deleted.",
    timeout: float = 30.0,
    **storage: str,
) -> AsyncIterator[tuple[Served, Served, Path]]:
    """Two Apps on one database (and Redis, when given); yields them and the victim dir.

    The model asks for `rm -rf victim` (an approval), then answers `then`.
    """
    settings, victim = setup(home, lark, llm, timeout=timeout)
    llm.reply_text(then)
    shared = settings.model_copy(
        update={"storage": settings.storage.model_copy(update=storage)} if storage else {}
    )
    async with Served(shared) as a, Served(shared) as b:
        yield a, b, victim


async def approved_on_the_other_replica(a: Served, b: Served, lark: FakeLark, victim: Path) -> None:
    """The turn runs on `a`; every click goes to `b`, then repeats go to both."""
    await a.post_event(message_event("delete victim", message_id="om_rm_x"))
    await lark.wait_for(lambda: len(approval_cards(lark)) == 1)
    approval = approval_id_of(approval_cards(lark)[0])

    stranger = await post_click(b, approval, "approve", operator="ou_stranger")
    assert stranger["toast"]["type"] == "error" and "card" not in stranger
    won = await post_click(b, approval, "approve")
    assert won["toast"]["type"] == "success"
    assert "Approved" in json.dumps(won["card"]["data"], ensure_ascii=False)
    await lark.wait_for(lambda: "Deleted." in lark.texts(), timeout=15)
    assert not victim.exists()
    for replica in (b, a):  # the first answer stands, wherever the second click lands
        again = await post_click(replica, approval, "deny")
        assert again["toast"]["content"] == "Already approved."
        assert "Approved" in json.dumps(again["card"]["data"], ensure_ascii=False)


async def test_click_on_the_other_replica_postgres(
    home: Path, pg_url: str, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with replicas(home, fake_lark, fake_llm, url=pg_url) as (a, b, victim):
        await approved_on_the_other_replica(a, b, fake_lark, victim)


async def test_click_on_the_other_replica_redis(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    with redis_server(tmp_path) as redis_url:
        async with replicas(home, fake_lark, fake_llm, redis_url=redis_url) as (a, b, victim):
            await approved_on_the_other_replica(a, b, fake_lark, victim)


async def test_click_on_the_other_replica_sqlite_polls(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with replicas(home, fake_lark, fake_llm) as (a, b, victim):
        await approved_on_the_other_replica(a, b, fake_lark, victim)


async def test_expiry_holds_across_replicas(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    late = "It was not approved in time."
    async with replicas(home, fake_lark, fake_llm, late, timeout=0.5) as (a, b, victim):
        await a.post_event(message_event("delete victim", message_id="om_rm_late"))
        await fake_lark.wait_for(lambda: late in fake_lark.texts())
        approval = approval_id_of(approval_cards(fake_lark)[0])
        click = await post_click(b, approval, "approve")
        assert click["toast"]["content"] == "This approval has expired."
        assert "Expired" in json.dumps(click["card"]["data"], ensure_ascii=False)
        assert await a.app.idle(30)
    assert victim.exists()
    patched = [json.loads(p["content"]) for p in fake_lark.patches]  # by the asking replica
    assert any("Expired" in json.dumps(c, ensure_ascii=False) for c in patched)


async def _woken_by(signal_a: Signal, signal_b: Signal, db_a: Database, db_b: Database) -> float:
    """Store A waits (re-reading only every 30 s); B answers; seconds until A's wait returns."""
    a, b = ApprovalStore(db_a, signal_a), ApprovalStore(db_b, signal_b)
    await a.init()
    await b.init()
    try:
        await a.open("ap_1", "shell", "rm -rf x", {"command": "rm -rf x"}, "ou_owner", 20)
        waiter = asyncio.create_task(a.wait("ap_1"))
        await asyncio.sleep(0.3)  # a is waiting; its first read has happened
        start = time.monotonic()
        answers = await asyncio.gather(
            b.answer("ap_1", "approved", "ou_owner"), b.answer("ap_1", "denied", "ou_owner")
        )
        assert sorted(answers) == [False, True]  # first answer wins, exactly once
        row = await asyncio.wait_for(waiter, WOKEN_WITHIN)
        assert row.state in ("approved", "denied") and row.answered_by == "ou_owner"
        return time.monotonic() - start
    finally:
        await a.close()
        await b.close()


async def test_postgres_notify_wakes_the_waiting_replica(pg_url: str) -> None:
    db_a, db_b = Database(pg_url), Database(pg_url)
    sig_a = PostgresSignal(db_a, APPROVAL_CHANNEL)
    sig_a.poll_seconds = 30.0  # only NOTIFY can wake it in time
    try:
        assert (
            await _woken_by(sig_a, PostgresSignal(db_b, APPROVAL_CHANNEL), db_a, db_b)
            < WOKEN_WITHIN
        )
    finally:
        await db_a.close()
        await db_b.close()


async def test_redis_pubsub_wakes_the_waiting_replica(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"
    db_a, db_b = Database(url), Database(url)
    with redis_server(tmp_path) as redis_url:
        sig_a = RedisSignal(redis_url, APPROVAL_CHANNEL)
        sig_a.poll_seconds = 30.0
        try:
            assert (
                await _woken_by(sig_a, RedisSignal(redis_url, APPROVAL_CHANNEL), db_a, db_b)
                < WOKEN_WITHIN
            )
        finally:
            await db_a.close()
            await db_b.close()


async def test_a_forged_approval_id_is_refused(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with replicas(home, fake_lark, fake_llm) as (_a, b, victim):
        answer = await post_click(b, "' OR 1=1 --", "approve")
        assert answer["toast"]["content"] == "This approval has expired."
    assert victim.exists()
