"""The durable-ack promise, with real `larkbot serve` processes: once Lark has its 200, a
`kill -9` loses nothing — the restarted process (same home, same database) answers every
claimed message exactly once. SQLite (WAL, synchronous=NORMAL) and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from bench.soak_rig import Replica, free_port
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import ENCRYPT_KEY, OWNER, TOKEN, message_event, seal

EVENTS = 12  # posted together, so their claims share group commits


def _config(port: int, lark: str, llm: str, storage_url: str) -> str:
    return (
        f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: 10}}\n"
        f"lark: {{app_id: cli_test, app_secret: secret, encrypt_key: '{ENCRYPT_KEY}', "
        f"verification_token: {TOKEN}, domain: '{lark}', streaming: false, "
        "claim_lease_seconds: 1}\n"
        f"llm: {{base_url: '{llm}', api_key: sk-test, max_retries: 0}}\n"
        f"storage: {{url: '{storage_url}'}}\n"
        f"owner: {{open_ids: [{OWNER}]}}\n"
    )


async def _kill_after_acks_then_restart(root: Path, storage_url: str) -> None:
    async with FakeLark() as lark, FakeLLM() as llm:
        held = True  # the first process's turns hang in the model call until it is killed
        llm.responder = lambda body: Reply(text="answered", delay=30 if held else 0)
        port = free_port()
        replica = Replica(root, 0, "", port)  # the config names its home's database
        storage_url = storage_url.replace("{home}", str(replica.home))
        (replica.home / "config.yaml").write_text(
            _config(port, lark.domain, llm.base_url, storage_url)
        )
        ids = [f"om_durable_{i}" for i in range(EVENTS)]
        try:
            async with (
                aiohttp.ClientSession() as ready_probe,
                httpx.AsyncClient(base_url=replica.base, timeout=30) as http,
            ):
                await replica.start()
                await replica.ready(ready_probe)

                async def post(message_id: str) -> int:
                    body, headers = seal(message_event("hi", message_id=message_id))
                    return (
                        await http.post("/lark/events", content=body, headers=headers)
                    ).status_code

                assert await asyncio.gather(*map(post, ids)) == [200] * EVENTS
                await replica.kill9()  # right after the last 200
                assert lark.sent == []  # nothing was answered before the kill
                held = False
                await replica.start()  # same home, same database
                await replica.ready(ready_probe)
                await lark.wait_for(lambda: len(lark.sent) >= EVENTS, timeout=60)
                await replica.stop()  # SIGTERM, drain: anything still running finishes
                assert replica.proc is not None and replica.proc.returncode == 0
        finally:
            await replica.kill9()
    replies: Counter[Any] = Counter(m["reply_to"] for m in lark.sent)
    assert replies == Counter(ids)  # every claimed message, exactly once


@pytest.mark.timeout(180)  # two cold starts of a real serve; slow on a loaded machine
async def test_kill_9_after_200_loses_nothing_sqlite(home: Path) -> None:
    await _kill_after_acks_then_restart(home, "sqlite:///{home}/larkbot.db")


@pytest.mark.postgres
@pytest.mark.timeout(180)  # two cold starts of a real serve; slow on a loaded machine
async def test_kill_9_after_200_loses_nothing_postgres(home: Path, pg_url: str) -> None:
    await _kill_after_acks_then_restart(home, pg_url)
