"""The Lark call ledger and the shared cache on a real PostgreSQL (as replicas share them)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from larkbot.lark.api.budget import CallLedger
from larkbot.lark.api.shared_cache import SharedCache
from larkbot.storage.db import Database


@pytest.fixture
async def db(pg_url: str) -> AsyncIterator[Database]:
    """A Database on this test's fresh PostgreSQL database."""
    database = Database(pg_url)
    assert not database.is_sqlite
    yield database
    await database.close()


async def test_replicas_count_exactly_and_notice_once(db: Database) -> None:
    notices: list[int] = []

    async def notice(month: str, used: int, budget: int) -> None:
        notices.append(used)

    replicas = [CallLedger(db, lambda: 1_000, notice) for _ in range(3)]
    await asyncio.gather(*(ledger.init() for ledger in replicas))  # racing CREATE TABLEs
    for round_ in range(10):
        for i, ledger in enumerate(replicas):
            for _ in range(30 + i):
                ledger.record(f"/open-apis/im/v1/messages/om_{round_}{i}xyz/reply")
            ledger.record("/open-apis/cardkit/v1/cards")
        await asyncio.gather(*(ledger.flush() for ledger in replicas))  # concurrent upserts
    await replicas[0].flush()
    expected = 10 * (30 + 31 + 32 + 3)
    assert replicas[0].used() == expected
    counts = await replicas[1].by_endpoint()
    assert counts == {
        "/open-apis/im/v1/messages/:id/reply": 10 * 93,
        "/open-apis/cardkit/v1/cards": 30,
    }
    assert len(notices) == 1 and notices[0] >= 800
    for ledger in replicas:
        await ledger.close()


async def test_shared_cache_put_get_replace_expire_drop(db: Database) -> None:
    cache = SharedCache(db)
    await asyncio.gather(cache.init(), SharedCache(db).init())
    await cache.put("tenant_token:abc", "t-1", time.time() + 60)
    await cache.put("tenant_token:abc", "t-2", time.time() + 60)  # replaced, not duplicated
    hit = await cache.get("tenant_token:abc")
    assert hit is not None and hit[0] == "t-2"
    await cache.put("bot_info:abc", "{}", time.time() - 1)
    assert await cache.get("bot_info:abc") is None  # expired
    await cache.drop("tenant_token:abc")
    assert await cache.get("tenant_token:abc") is None
