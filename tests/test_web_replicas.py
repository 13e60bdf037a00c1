"""Consent across replicas: the turn runs on one `serve` process, the click lands on another.

Two real `larkbot serve` processes on one PostgreSQL; the answer is recorded in the database
and LISTEN/NOTIFY (or Redis pub/sub) wakes the replica holding the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from larkbot.storage.db import Database
from larkbot.storage.signals import PostgresSignal, RedisSignal
from larkbot.web.consent_board import ConsentBoard
from tests.fakes.llm import FakeLLM
from tests.lark_harness import free_port, redis_server
from tests.web_harness import AUTH, WEB_TOKEN, chat_turn, consents, outside_tmp

READY_SECONDS = 120  # bounded; a cold start took >30 s once with 8 helpers on 2 cores
# Only the signal wakes the waiter before its 30 s re-read; a loaded machine still answers
# well within this bound.
WOKEN_WITHIN = 20


class ServeProcess:
    """`larkbot serve` in its own process and home, on a shared PostgreSQL."""

    def __init__(self, tmp: Path, name: str, pg_url: str, llm_url: str) -> None:
        self.home = tmp / name
        self.home.mkdir()
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.config = self.home / "config.yaml"
        self.config.write_text(
            f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: 2}}\n"
            "lark: {verification_token: vt}\n"
            f"llm: {{base_url: '{llm_url}', api_key: sk-test, max_retries: 0}}\n"
            f"storage: {{url: '{pg_url}'}}\n"
            f"web: {{token: {WEB_TOKEN}}}\n"
            "scheduler: {enabled: false}\n"
        )
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Spawn the process (logs to serve.log in its home)."""
        env = {**os.environ, "LARKBOT_HOME": str(self.home)}
        with (self.home / "serve.log").open("wb") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "larkbot", "serve", "--config", str(self.config),
                env=env, stdout=log, stderr=log,
            )  # fmt: skip

    async def ready(self, deadline: float) -> None:
        """Wait until /healthz answers 200; fail at once if the process exits, else at `deadline`.

        Generous because a cold `serve` start imports a lot and 2 shared cores may be busy; the
        check itself (both replicas healthy before the turn) is unchanged.
        """
        assert self.proc is not None
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            while time.monotonic() < deadline:
                if self.proc.returncode is not None:
                    break
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with http.get(f"{self.base}/healthz") as r:
                        if r.status == 200:
                            return
                await asyncio.sleep(0.1)  # poll interval; an exit is seen on the next round
        log = (self.home / "serve.log").read_text()[-2000:]
        raise AssertionError(f"{self.home.name} not healthy (exit {self.proc.returncode}):\n{log}")

    async def stop(self) -> None:
        """SIGTERM, bounded; kill if it hangs."""
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


@contextlib.asynccontextmanager
async def two_replicas(tmp: Path, pg_url: str, llm_url: str) -> AsyncIterator[tuple[str, str]]:
    """Two serve processes started together; yields their base URLs once both are healthy."""
    procs = [ServeProcess(tmp, name, pg_url, llm_url) for name in ("a", "b")]
    try:
        for p in procs:
            await p.start()
        deadline = time.monotonic() + READY_SECONDS
        await asyncio.gather(*(p.ready(deadline) for p in procs))
        yield procs[0].base, procs[1].base
    finally:
        await asyncio.gather(*(p.stop() for p in procs))


@pytest.mark.timeout(READY_SECONDS + 60)  # the readiness wait plus the turn itself
async def test_consent_answered_on_the_other_replica(
    tmp_path: Path, pg_url: str, fake_llm: FakeLLM
) -> None:
    with outside_tmp() as work:
        target = work / "from-a.txt"
        fake_llm.reply_tools(("file_write", {"path": str(target), "content": "replicated"}))
        fake_llm.reply_text("Written.")
        async with (
            two_replicas(tmp_path, pg_url, fake_llm.base_url) as (a, b),
            aiohttp.ClientSession() as http,
        ):
            events = await chat_turn(
                http, a, "write it", answer="allow_once", consent_base=b
            )  # the turn streams from a; the click goes to b
            rid = consents(events)[0]["request_id"]
            for base in (a, b):  # answered once, for good, wherever asked
                async with http.post(
                    f"{base}/api/consent/{rid}", json={"decision": "deny"}, headers=AUTH
                ) as r:
                    assert r.status == 409
        assert target.read_text() == "replicated"
        resolved = [e["value"] for e in events if e.get("name") == "consent_resolved"]
        assert resolved == [{"request_id": rid, "decision": "allow_once"}]
        assert events[-1]["type"] == "RUN_FINISHED"


async def _woken_by(signal_a: object, signal_b: object, db_a: Database, db_b: Database) -> float:
    """Board A waits (polling only every 30 s); board B answers; seconds until A returns."""
    a = ConsentBoard(db_a, signal_a, timeout=20)  # type: ignore[arg-type]
    b = ConsentBoard(db_b, signal_b, timeout=20)  # type: ignore[arg-type]
    await a.init()
    await b.init()
    try:
        req = await a.open("web:s", "file_write", "/x", False)
        waiter = asyncio.create_task(a.wait(req))
        await asyncio.sleep(0.3)  # a is waiting; its first poll has happened
        start = time.monotonic()
        assert await b.answer(req.request_id, "allow_session") == "ok"
        assert await asyncio.wait_for(waiter, WOKEN_WITHIN) == "allow_session"
        return time.monotonic() - start
    finally:
        await a.close()
        await b.close()


async def test_postgres_notify_wakes_the_waiting_replica(pg_url: str) -> None:
    db_a, db_b = Database(pg_url), Database(pg_url)
    sig_a = PostgresSignal(db_a)
    sig_a.poll_seconds = 30.0  # only NOTIFY can wake it in time
    try:
        assert await _woken_by(sig_a, PostgresSignal(db_b), db_a, db_b) < WOKEN_WITHIN
    finally:
        await db_a.close()
        await db_b.close()


async def test_redis_pubsub_wakes_the_waiting_replica(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"
    db_a, db_b = Database(url), Database(url)
    with redis_server(tmp_path) as redis_url:
        sig_a = RedisSignal(redis_url)
        sig_a.poll_seconds = 30.0
        try:
            assert await _woken_by(sig_a, RedisSignal(redis_url), db_a, db_b) < WOKEN_WITHIN
        finally:
            await db_a.close()
            await db_b.close()
