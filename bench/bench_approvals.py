"""Approval clicks across replicas: from the click's answer on one replica until the waiting
turn on another wakes, against a click on the replica that asked (same run).

Two `ApprovalStore`s on one SQLite file stand for two replicas: without a signal the waiter
re-reads its row every 0.5 s; with Redis (a throwaway `redis-server`, when installed) pub/sub
wakes it at once. PostgreSQL's LISTEN/NOTIFY too, on a fresh database of the server named by
`LARKBOT_TEST_PG_URL` (the throwaway cluster `make bench` starts).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator

from larkbot.lark.approvals.approval_store import ApprovalStore
from larkbot.logs import configure_logging
from larkbot.storage.db import Database
from larkbot.storage.signals import (
    APPROVAL_CHANNEL,
    LocalSignal,
    PostgresSignal,
    RedisSignal,
    Signal,
)

ROUNDS = 20


async def _latencies(waiter: ApprovalStore, clicker: ApprovalStore) -> list[float]:
    """Seconds from the winning answer until `waiter.wait` returns, ROUNDS times."""
    out = []
    for i in range(ROUNDS):
        approval_id = f"ap_{time.monotonic_ns()}_{i}"
        await waiter.open(approval_id, "shell", "rm -rf x", {}, "ou_owner", 60)
        waiting = asyncio.create_task(waiter.wait(approval_id))
        await asyncio.sleep(0.05 + 0.37 * (i % 4) / 4)  # land at different points of the poll
        start = time.perf_counter()
        assert await clicker.answer(approval_id, "approved", "ou_owner")
        await asyncio.wait_for(waiting, 10)
        out.append(time.perf_counter() - start)
    return out


async def _pair(url: str, make: Callable[[Database], Signal]) -> tuple[ApprovalStore, ...]:
    stores = []
    for _ in range(2):
        db = Database(url)
        store = ApprovalStore(db, make(db))
        await store.init()
        stores.append(store)
    return tuple(stores)


@contextlib.contextmanager
def _redis(workdir: str) -> Iterator[str | None]:
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # bounded by the process: it exits or says it is ready
            if "Ready to accept connections" in line:
                break
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def _fmt(name: str, values: list[float], base: float) -> str:
    p50 = statistics.median(values) * 1000
    p95 = sorted(values)[int(len(values) * 0.95) - 1] * 1000
    return f"{name:44s} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  ({p50 / base:6.1f}x the same replica)"


async def _run() -> None:
    workdir = tempfile.mkdtemp(prefix="larkbot-bench-approvals-")
    url = f"sqlite:///{workdir}/shared.db"
    same, other = await _pair(url, lambda db: LocalSignal())
    local = await _latencies(same, same)
    polled = await _latencies(same, other)
    base = statistics.median(local) * 1000
    print(_fmt("click on the replica that asked", local, base))
    print(_fmt("click on another replica, SQLite re-read", polled, base))
    with _redis(workdir) as redis_url:
        if redis_url is None:
            print("redis-server not installed: pub/sub not measured")
        else:
            a, b = await _pair(url, lambda db: RedisSignal(redis_url, APPROVAL_CHANNEL))
            print(_fmt("click on another replica, Redis pub/sub", await _latencies(a, b), base))
            await _close(a, b)
    if os.environ.get("LARKBOT_TEST_PG_URL"):
        from tests.pg import fresh_database

        async with fresh_database() as pg_url:
            a, b = await _pair(pg_url, lambda db: PostgresSignal(db, APPROVAL_CHANNEL))
            latencies = await _latencies(a, b)
            await _close(a, b)
        print(_fmt("click on another replica, PostgreSQL NOTIFY", latencies, base))
    else:
        print("LARKBOT_TEST_PG_URL not set (`make bench` sets it): PostgreSQL NOTIFY not measured")
    await _close(same, other)


async def _close(*stores: ApprovalStore) -> None:
    for store in stores:
        await store.close()
        await store.db.close()


def main() -> None:
    """Print the wake-up latency of an approval answered on each kind of replica."""
    configure_logging("error")
    asyncio.run(_run())
