"""A synchronous SQLAlchemy engine whose transactions each run whole on the engine's own threads.

SQLAlchemy's asyncio layer goes from the event loop to the driver and back for every driver
call (begin, execute, fetch, commit; on SQLite each through aiosqlite's thread), and every way
back waits for the loop to come round. One journal claim made about six such trips; on a loop
busy with turns the webhook's 200 waited for all of them (`python -m bench webhook`, SQLite:
claim commit p99 42 ms, ack p99 130 ms). Here a transaction is one function run on one of these
threads: one trip there and one back (claim commit p99 10 ms, ack p99 below 10 ms in steady
seconds). The journal uses it; the rest of the project stays on `Database`, where a turn's few
extra milliseconds are not anyone's deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Table, create_engine

from larkbot.storage.db import READ_ONLY, create_all, listen_sqlite, missing_driver, sync_url

T = TypeVar("T")


class ThreadedDatabase:
    """`connections` pooled connections to `url`, each used by one of as many threads."""

    def __init__(self, url: str, connections: int, name: str) -> None:
        self.is_sqlite = url.startswith("sqlite")
        try:
            # pool_reset_on_return: every use ends its transaction itself (`write`, `read`).
            # hide_parameters: a failed statement's logged error must not carry message text.
            self.engine: Engine = create_engine(
                sync_url(url),
                pool_size=connections,
                max_overflow=0,
                pool_reset_on_return=None,
                pool_pre_ping=not self.is_sqlite,
                hide_parameters=True,
                # a pooled SQLite connection moves between this pool's threads (never two at once)
                connect_args={"check_same_thread": False} if self.is_sqlite else {},
            )
        except ModuleNotFoundError as err:
            raise missing_driver(err) from None
        if self.is_sqlite:
            listen_sqlite(self.engine)
        self._threads = ThreadPoolExecutor(connections, thread_name_prefix=name)
        self._closed = False

    async def write(self, work: Callable[[Connection], T]) -> T:
        """`work(conn)` in one transaction (IMMEDIATE on SQLite), committed unless it raises."""

        def transaction() -> T:
            with self.engine.begin() as conn:
                return work(conn)

        return await self._run(transaction)

    async def read(self, work: Callable[[Connection], T]) -> T:
        """`work(conn)` in a read-only transaction (deferred on SQLite: it never waits for a
        writer in WAL)."""

        def transaction() -> T:
            with self.engine.connect() as conn:
                return work(conn.execution_options(**{READ_ONLY: True}))

        return await self._run(transaction)

    async def create(self, *tables: Table) -> None:
        """Create the given tables if they do not exist yet (serialised across replicas)."""
        await self.write(lambda conn: create_all(conn, list(tables)))

    async def close(self) -> None:
        """Close the connections once the work already queued is done; stop the threads.
        Closing again does nothing; a transaction asked for after closing raises RuntimeError."""
        if self._closed:
            return
        self._closed = True
        await self._run(self.engine.dispose)
        self._threads.shutdown(wait=False)

    async def _run(self, work: Callable[[], T]) -> T:
        # Cancelling the caller does not stop `work`: a transaction ends as it would have.
        result: Any = await asyncio.get_running_loop().run_in_executor(self._threads, work)
        return result
