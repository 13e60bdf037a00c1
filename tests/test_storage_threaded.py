"""ThreadedDatabase: each transaction runs whole on the engine's threads, never on the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, Table, insert, select, update

from larkbot.errors import ConfigError
from larkbot.storage.threaded import ThreadedDatabase

_meta = MetaData()
counter = Table(
    "threaded_counter", _meta, Column("id", Integer, primary_key=True), Column("n", Integer)
)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[ThreadedDatabase]:
    database = ThreadedDatabase(f"sqlite:///{tmp_path}/t.db", 1, "test-db")
    await database.write(lambda conn: _meta.create_all(conn))
    await database.write(lambda conn: conn.execute(insert(counter).values(id=1, n=0)))
    yield database
    await database.close()


def _n(conn: Connection) -> int:
    return int(conn.execute(select(counter.c.n)).scalar_one())


async def test_a_transaction_runs_on_the_databases_thread_and_commits(db: ThreadedDatabase) -> None:
    threads: list[str] = []

    def bump(conn: Connection) -> int:
        threads.append(threading.current_thread().name)
        conn.execute(update(counter).values(n=counter.c.n + 1))
        return _n(conn)

    assert await asyncio.gather(*(db.write(bump) for _ in range(20))) == list(range(1, 21))
    assert await db.read(_n) == 20
    assert threads and all(t.startswith("test-db") for t in threads)


async def test_work_that_raises_rolls_its_transaction_back(db: ThreadedDatabase) -> None:
    def half_done(conn: Connection) -> None:
        conn.execute(update(counter).values(n=99))
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        await db.write(half_done)
    assert await db.read(_n) == 0


async def test_a_locked_file_keeps_the_loop_free_and_a_read_does_not_wait(
    db: ThreadedDatabase, tmp_path: Path
) -> None:
    """Another process holds the write lock: the write waits on the thread, the loop runs, and
    a read (deferred, WAL) answers at once."""
    other = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    write = asyncio.create_task(db.write(lambda conn: conn.execute(update(counter).values(n=5))))
    reader = ThreadedDatabase(f"sqlite:///{tmp_path}/t.db", 1, "reader")
    assert await asyncio.wait_for(reader.read(_n), 10) == 0
    assert not write.done()  # the read was answered on this loop while the write still waits
    other.execute("ROLLBACK")
    other.close()
    await asyncio.wait_for(write, 10)
    assert await db.read(_n) == 5
    await reader.close()


async def test_close_twice_is_harmless_and_later_work_is_refused(tmp_path: Path) -> None:
    db = ThreadedDatabase(f"sqlite:///{tmp_path}/c.db", 1, "closing")
    assert await db.read(lambda conn: 1) == 1
    await db.close()
    await db.close()
    with pytest.raises(RuntimeError):
        await db.read(lambda conn: 1)


def test_a_missing_driver_names_the_key_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_psycopg2(name: str, *args: Any, **kwargs: Any) -> Any:
        level = args[3] if len(args) > 3 else kwargs.get("level", 0)
        if name.startswith("psycopg2") and not level:  # the driver, not the dialect's module
            raise ModuleNotFoundError(f"No module named {name!r}", name="psycopg2")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psycopg2)
    with pytest.raises(ConfigError, match=r"storage.url.*psycopg2.*larkbot\[postgres\]"):
        ThreadedDatabase("postgresql://u:p@127.0.0.1:1/db", 1, "pg")
