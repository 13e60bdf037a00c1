"""The durable-ack promise, with real `larkbot serve` processes: once Lark has its 200, a
`kill -9` loses nothing — the restarted process (same home, same database) answers every
claimed message exactly once. SQLite (WAL, synchronous=NORMAL) and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import ENCRYPT_KEY, OWNER, TOKEN, message_event, seal

EVENTS = 12  # posted together, so their claims share group commits


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(home: Path, port: int, lark: str, llm: str, storage_url: str) -> Path:
    config = home / "config.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: 10}}\n"
        f"lark: {{app_id: cli_test, app_secret: secret, encrypt_key: '{ENCRYPT_KEY}', "
        f"verification_token: {TOKEN}, domain: '{lark}', streaming: false, "
        "claim_lease_seconds: 1}\n"
        f"llm: {{base_url: '{llm}', api_key: sk-test, max_retries: 0}}\n"
        f"storage: {{url: '{storage_url}'}}\n"
        f"owner: {{open_ids: [{OWNER}]}}\n"
    )
    return config


async def _serve(home: Path, config: Path) -> asyncio.subprocess.Process:
    env = {**os.environ, "LARKBOT_HOME": str(home)}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "larkbot",
        "serve",
        "--config",
        str(config),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def _healthy(http: httpx.AsyncClient, proc: asyncio.subprocess.Process) -> None:
    for _ in range(600):  # a readiness probe, bounded (~60 s: a loaded machine is slow)
        assert proc.returncode is None, "serve exited"
        try:
            if (await http.get("/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("serve never became healthy")


async def _kill_after_acks_then_restart(home: Path, storage_url: str) -> None:
    async with FakeLark() as lark, FakeLLM() as llm:
        held = True  # the first process's turns hang in the model call until it is killed
        llm.responder = lambda body: Reply(text="answered", delay=30 if held else 0)
        port = _free_port()
        config = _config(home, port, lark.domain, llm.base_url, storage_url)
        ids = [f"om_durable_{i}" for i in range(EVENTS)]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            first = await _serve(home, config)
            try:
                await _healthy(http, first)

                async def post(message_id: str) -> int:
                    body, headers = seal(message_event("hi", message_id=message_id))
                    return (
                        await http.post("/lark/events", content=body, headers=headers)
                    ).status_code

                assert await asyncio.gather(*map(post, ids)) == [200] * EVENTS
                first.send_signal(signal.SIGKILL)  # right after the last 200
                await asyncio.wait_for(first.wait(), 10)
            finally:
                if first.returncode is None:
                    first.kill()
                    await first.wait()
            assert lark.sent == []  # nothing was answered before the kill
            held = False
            second = await _serve(home, config)  # same home, same database
            try:
                await _healthy(http, second)
                await lark.wait_for(lambda: len(lark.sent) >= EVENTS, timeout=60)
                second.send_signal(signal.SIGTERM)  # drain: anything still running finishes
                assert await asyncio.wait_for(second.wait(), 30) == 0
            finally:
                if second.returncode is None:
                    second.kill()
                    await second.wait()
    replies: Counter[Any] = Counter(m["reply_to"] for m in lark.sent)
    assert replies == Counter(ids)  # every claimed message, exactly once


async def test_kill_9_after_200_loses_nothing_sqlite(home: Path) -> None:
    await _kill_after_acks_then_restart(home, f"sqlite:///{home}/larkbot.db")


@pytest.mark.postgres
async def test_kill_9_after_200_loses_nothing_postgres(home: Path, pg_url: str) -> None:
    await _kill_after_acks_then_restart(home, pg_url)
