"""Renewing 1,000 held journal leases: one statement per batch vs one per message (same run).

The heartbeat of a replica with many turns in flight renews every claim it holds each third of
`lark.claim_lease_seconds`, on the storage its acks commit to. Before: `journal.renew` per
message, 64 in flight at once. Now: `journal.renew_many`, one statement (or one Redis script)
per RENEW_BATCH messages. Measured on SQLite, on PostgreSQL (LARKBOT_TEST_PG_URL's server, or a
throwaway one from tests/pg_cluster.sh, which runs with fsync off: real commits cost more) and,
when redis-server is installed, on Redis. Also the event loop's longest stall during each (the
webhook's acks share that loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from bench.loop_lag import LagProbe
from larkbot.lark.claims.journal import RENEW_BATCH, InboundJournal, SqlJournal, renew_batches
from larkbot.logs import configure_logging
from larkbot.storage.db import Database

HELD = 1000
PER_MESSAGE_AT_ONCE = 64  # what the heartbeat kept in flight before
ROUNDS = 3


async def _per_message(journal: InboundJournal, ids: list[str]) -> int:
    """The old heartbeat: `renew` each, PER_MESSAGE_AT_ONCE concurrently; returns calls made."""
    for start in range(0, len(ids), PER_MESSAGE_AT_ONCE):
        chunk = ids[start : start + PER_MESSAGE_AT_ONCE]
        assert all(await asyncio.gather(*(journal.renew(m) for m in chunk)))
    return len(ids)


async def _batched(journal: InboundJournal, ids: list[str]) -> int:
    """The heartbeat now: one `renew_many` (a statement per RENEW_BATCH); returns statements."""
    assert len(await journal.renew_many(ids)) == len(ids)
    return len(list(renew_batches(ids)))


async def _measure(journal: InboundJournal) -> dict[str, tuple[float, float, int]]:
    """Median ms and loop stall ms of ROUNDS renewals of HELD leases, each way."""
    await journal.init()
    ids = [f"om_lease_{i}" for i in range(HELD)]
    for start in range(0, HELD, 50):  # redis-py's pool holds 100 connections
        chunk = ids[start : start + 50]
        assert all(await asyncio.gather(*(journal.claim(m, "{}") for m in chunk)))
    figures = {}
    ways: dict[str, Callable[[InboundJournal, list[str]], Awaitable[int]]] = {
        "per message": _per_message,
        "batched": _batched,
    }
    for name, way in ways.items():
        times, stalls, calls = [], [], 0
        for _ in range(ROUNDS):
            async with LagProbe() as probe:
                started = time.perf_counter()
                calls = await way(journal, ids)
                times.append((time.perf_counter() - started) * 1000)
            stalls.append(probe.max_ms)
        figures[name] = (statistics.median(times), statistics.median(stalls), calls)
    await journal.close()
    return figures


@contextlib.asynccontextmanager
async def _postgres_url() -> AsyncIterator[str]:
    """A fresh database on LARKBOT_TEST_PG_URL's server, else a throwaway cluster."""
    if os.environ.get("LARKBOT_TEST_PG_URL"):
        from tests.pg import fresh_database

        async with fresh_database() as url:
            yield url
        return
    script = str(Path(__file__).resolve().parent.parent / "tests" / "pg_cluster.sh")
    cluster = tempfile.mkdtemp(prefix="larkbot-bench-pg-")
    started = await asyncio.to_thread(
        subprocess.run, [script, "start", cluster], capture_output=True, text=True, check=False
    )
    try:
        if started.returncode != 0:
            raise RuntimeError(f"no PostgreSQL: {started.stderr.strip()}")
        yield started.stdout.strip()
    finally:
        await asyncio.to_thread(subprocess.run, [script, "stop", cluster], check=False)


async def _run() -> dict[str, dict[str, tuple[float, float, int]]]:
    configure_logging("error", "json")
    runs = {}
    home = Path(tempfile.mkdtemp(prefix="larkbot-bench-leases-"))
    db = Database(f"sqlite:///{home}/larkbot.db")
    runs["SQLite"] = await _measure(SqlJournal(db, lease_seconds=60))
    await db.close()
    async with _postgres_url() as url:
        pg = Database(url)
        runs["PostgreSQL"] = await _measure(SqlJournal(pg, lease_seconds=60))
        await pg.close()
    if shutil.which("redis-server"):
        from larkbot.lark.claims.journal_redis import RedisJournal
        from tests.lark_harness import redis_server

        with redis_server(home) as redis_url:
            runs["Redis"] = await _measure(RedisJournal(redis_url, lease_seconds=60))
    shutil.rmtree(home, ignore_errors=True)
    return runs


def main() -> None:
    """Measure both ways on each storage and print the figures with their ratio."""
    runs = asyncio.run(_run())
    print(f"renewing {HELD} held leases, median of {ROUNDS} rounds; before: renew() per message,")
    print(f"{PER_MESSAGE_AT_ONCE} at once; after: renew_many(), {RENEW_BATCH} per statement")
    print(f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':12}{'before ms':>11}{'after ms':>10}{'speed-up':>10}{'calls':>12}  loop stall ms")
    for name, run in runs.items():
        (old_ms, old_stall, old_calls), (new_ms, new_stall, new_calls) = run.values()
        print(
            f"{name:12}{old_ms:11.1f}{new_ms:10.1f}{old_ms / new_ms:9.1f}x"
            f"{f'{old_calls} → {new_calls}':>12}  {old_stall:.1f} → {new_stall:.1f}"
        )


if __name__ == "__main__":
    main()
