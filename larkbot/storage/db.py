"""The shared async SQL engine. Each store defines its tables on `metadata` and creates them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, MetaData, Table, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from larkbot.errors import ConfigError
from larkbot.storage.clock import StorageClock

metadata = MetaData()
READ_ONLY = "larkbot_read_only"  # execution option of `Database.read` connections


def async_url(url: str) -> str:
    """Map `storage.url` to an async driver URL (aiosqlite / asyncpg)."""
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + _param(url.split("://", 1)[1], "sslmode", "ssl")
    if "+" in url.split("://", 1)[0]:
        return url
    raise ConfigError(
        f"storage.url: unsupported database URL {url.split('://', 1)[0]!r}; "
        "use sqlite:///path/to/larkbot.db or postgresql://user:pass@host/db"
    )


def sync_url(url: str) -> str:
    """Map `storage.url` to a synchronous driver URL (APScheduler's job store, the journal)."""
    if url.startswith("sqlite"):
        return "sqlite:///" + url.split(":///", 1)[1]
    return "postgresql+psycopg2://" + _param(url.split("://", 1)[1], "ssl", "sslmode")


def _param(url: str, old: str, new: str) -> str:
    # libpq and psycopg2 spell TLS `?sslmode=require`, asyncpg `?ssl=require` and each rejects
    # the other's; one storage.url feeds both engines, so accept either and translate.
    return re.sub(rf"([?&]){old}=", rf"\g<1>{new}=", url)


def safe_url(url: str) -> str:
    """`url` with its password masked, for messages (`postgresql://bot:***@db/larkbot`)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # unparseable: mask whatever sits before the '@'
        return re.sub(r"://[^@/]*@", "://***@", url)


class Database:
    """Owns the async engine for `storage.url`; SQLite gets WAL and a busy timeout."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            path = Path(url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # A server restart or an idle timeout kills pooled PostgreSQL connections: ping
            # on checkout and reconnect rather than fail the next turn (as make_jobstore does).
            # hide_parameters: a failed statement's error (logged with exc_info) must not carry
            # the bound values — chat messages, history, tool output are personal data.
            self.engine: AsyncEngine = create_async_engine(
                async_url(url),
                pool_pre_ping=not self.is_sqlite,
                hide_parameters=True,
            )
        except ModuleNotFoundError as err:
            raise missing_driver(err) from None
        if self.is_sqlite:
            listen_sqlite(self.engine.sync_engine)
        # the time leases and deadlines shared by replicas are written and compared in
        self.clock = StorageClock(None if self.is_sqlite else self._server_time)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads only (writes go through `engine.begin()`).

        On SQLite its transaction is a plain deferred one: in WAL a reader never waits for the
        write lock, where the IMMEDIATE begin of every other transaction queued each history
        load behind every write and, on a starved machine, failed it after the busy timeout.
        """
        async with self.engine.connect() as conn:
            yield await conn.execution_options(**{READ_ONLY: True})

    async def _server_time(self) -> float:
        """PostgreSQL's wall clock, epoch seconds."""
        async with self.read() as conn:
            query = text("SELECT extract(epoch FROM clock_timestamp())")
            return float((await conn.execute(query)).scalar_one())

    async def create(self, *tables: Table) -> None:
        """Create the given tables if they do not exist yet."""
        async with self.engine.begin() as conn:
            await conn.run_sync(create_all, list(tables))

    async def close(self) -> None:
        """Dispose of every pooled connection."""
        await self.engine.dispose()


def missing_driver(err: ModuleNotFoundError) -> ConfigError:
    """What to say when `storage.url` names a database whose driver is not installed."""
    return ConfigError(
        f"storage.url: the database driver {err.name} is not installed; "
        "for PostgreSQL: pip install 'larkbot[postgres]'"
    )


def listen_sqlite(engine: Engine) -> None:
    """Connections of `engine` get IMMEDIATE transactions, WAL and the busy timeout."""
    event.listen(engine, "connect", _sqlite_pragmas)
    event.listen(engine, "begin", _sqlite_begin)


# Any constant: the advisory lock that serialises CREATE TABLE across PostgreSQL replicas.
_DDL_LOCK = 0x6C61726B


def lock_ddl(conn: Connection) -> None:
    """Hold the DDL lock until this transaction ends (PostgreSQL only; a no-op on SQLite).

    PostgreSQL's `CREATE TABLE` after a "does it exist?" check races when replicas start
    together: the loser fails with a unique violation on pg_type instead of finding the table.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DDL_LOCK})


def create_all(conn: Connection, tables: list[Table]) -> None:
    """Create `tables` that do not exist yet, holding the DDL lock (PostgreSQL replicas)."""
    lock_ddl(conn)
    metadata.create_all(conn, tables=tables)


def _sqlite_pragmas(dbapi_conn: Any, _: Any) -> None:
    """On connect: explicit transactions, the busy timeout, WAL, synchronous=NORMAL."""
    # Python's sqlite3 opens a transaction only at the first write, so the read of a
    # read-modify-write ran outside it (lost updates) and a deferred read-then-write could fail
    # at once with "database is locked" (SQLite skips the busy handler there). Transactions
    # are begun explicitly instead, as IMMEDIATE: the write lock is taken up front and waits
    # out `busy_timeout`.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    # The timeout first: switching to WAL takes a lock, and while another process starting on
    # the same home held it, the switch failed at once with "database is locked".
    cur.execute("PRAGMA busy_timeout=15000")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_begin(conn: Any) -> None:
    """On begin: IMMEDIATE (the write lock up front), or deferred for `READ_ONLY` connections."""
    conn.exec_driver_sql(
        "BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE"
    )
