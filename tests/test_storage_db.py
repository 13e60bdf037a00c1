"""The shared SQLite engine: real (IMMEDIATE) transactions, so concurrent writers lose nothing."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, select, update

from larkbot.errors import ConfigError
from larkbot.storage.db import Database, async_url, sync_url

_meta = MetaData()
counter = Table(
    "test_counter", _meta, Column("id", Integer, primary_key=True), Column("n", Integer)
)


async def test_concurrent_read_modify_write_loses_nothing(tmp_path: Path) -> None:
    """Regression: sqlite3 ran the read outside the transaction; 200 bumps ended at 2."""
    db = Database(f"sqlite:///{tmp_path}/c.db")
    async with db.engine.begin() as conn:
        await conn.run_sync(_meta.create_all)
        await conn.execute(counter.insert().values(id=1, n=0))

    async def bump() -> None:
        async with db.engine.begin() as conn:
            n = (await conn.execute(select(counter.c.n))).scalar_one()
            await asyncio.sleep(0)  # let the others interleave between the read and the write
            await conn.execute(update(counter).values(n=n + 1))

    await asyncio.gather(*(bump() for _ in range(100)))
    async with db.engine.connect() as conn:
        assert (await conn.execute(select(counter.c.n))).scalar_one() == 100
    await db.close()


async def test_reads_never_wait_for_the_write_lock(tmp_path: Path) -> None:
    """A read while another connection holds the write lock answers at once (WAL), with the
    last committed state; before, every read began IMMEDIATE and waited out the busy timeout."""
    db = Database(f"sqlite:///{tmp_path}/w.db")
    async with db.engine.begin() as conn:
        await conn.run_sync(_meta.create_all)
        await conn.execute(counter.insert().values(id=1, n=7))
    writer = sqlite3.connect(tmp_path / "w.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE test_counter SET n = 8")
    try:
        async with asyncio.timeout(3), db.read() as conn:
            assert (await conn.execute(select(counter.c.n))).scalar_one() == 7
        other = sqlite3.connect(tmp_path / "w.db", timeout=0, isolation_level=None)
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # the lock is held
            other.execute("BEGIN IMMEDIATE")
        other.close()
    finally:
        writer.execute("COMMIT")
        writer.close()
    async with db.read() as conn:
        assert (await conn.execute(select(counter.c.n))).scalar_one() == 8
    await db.close()


async def test_rollback_still_rolls_back(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/r.db")
    async with db.engine.begin() as conn:
        await conn.run_sync(_meta.create_all)
    with pytest.raises(RuntimeError):
        async with db.engine.begin() as conn:
            await conn.execute(counter.insert().values(id=7, n=7))
            raise RuntimeError("abort")
    async with db.engine.connect() as conn:
        assert (await conn.execute(select(counter))).all() == []
    await db.close()


def test_urls() -> None:
    assert async_url("sqlite:////data/x.db") == "sqlite+aiosqlite:////data/x.db"
    assert async_url("postgresql://u:p@h/db") == "postgresql+asyncpg://u:p@h/db"
    assert sync_url("postgresql://u:p@h/db") == "postgresql+psycopg2://u:p@h/db"
    with pytest.raises(ConfigError, match=r"storage\.url"):
        async_url("mysql://x")
