"""The shared async SQL engine. Each store defines its tables on `metadata` and creates them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, Table, event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from larkbot.errors import ConfigError

metadata = MetaData()


def async_url(url: str) -> str:
    """Map `storage.url` to an async driver URL (aiosqlite / asyncpg)."""
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    if "+" in url.split("://", 1)[0]:
        return url
    raise ConfigError(
        f"storage.url: unsupported database URL {url.split('://', 1)[0]!r}; "
        "use sqlite:///path/to/larkbot.db or postgresql://user:pass@host/db"
    )


def sync_url(url: str) -> str:
    """Map `storage.url` to a synchronous driver URL (for APScheduler's job store)."""
    if url.startswith("sqlite"):
        return "sqlite:///" + url.split(":///", 1)[1]
    return "postgresql+psycopg2://" + url.split("://", 1)[1]


class Database:
    """Owns the async engine for `storage.url`; SQLite gets WAL and a busy timeout."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            path = Path(url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
        self.engine: AsyncEngine = create_async_engine(async_url(url))
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
            event.listen(self.engine.sync_engine, "begin", _sqlite_begin_immediate)

    async def create(self, *tables: Table) -> None:
        """Create the given tables if they do not exist yet."""
        async with self.engine.begin() as conn:
            await conn.run_sync(lambda sync: metadata.create_all(sync, tables=list(tables)))

    async def close(self) -> None:
        """Dispose of every pooled connection."""
        await self.engine.dispose()


def _sqlite_pragmas(dbapi_conn: Any, _: Any) -> None:
    # Python's sqlite3 opens a transaction only at the first write, so the read of a
    # read-modify-write ran outside it (lost updates) and a deferred read-then-write could fail
    # at once with "database is locked" (SQLite skips the busy handler there). Transactions
    # are begun explicitly instead, as IMMEDIATE: the write lock is taken up front and waits
    # out `busy_timeout`.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=15000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_begin_immediate(conn: Any) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")
