"""A leader `kill -9`-ed mid-run: the restarted `larkbot serve` re-runs that tick, once.

A real `serve` process on a SQLite home leads the scheduler; a job falls due and its run asks
the fake model, which is slow to answer; the process is killed (SIGKILL: no drain, no lease
released) while the run waits. The process restarted on the same home takes the leader lease,
re-takes the run whose claim ran out and runs it again: the fake Lark gets exactly one message
for that tick, and the run's row says done. Leases are short (scheduler.lease_seconds: 2).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import sqlalchemy as sa

from bench.soak_rig import Replica, StampedLark, free_port
from larkbot.config import parse_settings
from larkbot.scheduler import ScheduleService
from larkbot.scheduler.runs import scheduler_runs
from larkbot.storage.db import Database
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import ENCRYPT_KEY, OWNER, TOKEN

CHAT = "oc_kill9"
SLOW = 60.0  # the first run's model call: far longer than the test waits before the kill


def _config(port: int, lark: str, llm: str) -> str:
    return (
        f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: 2}}\n"
        f"lark: {{app_id: cli_test, app_secret: secret, encrypt_key: '{ENCRYPT_KEY}',\n"
        f"  verification_token: {TOKEN}, domain: '{lark}', streaming: false}}\n"
        f"owner: {{open_ids: [{OWNER}]}}\n"
        f"llm: {{base_url: '{llm}', api_key: sk-test, max_retries: 0}}\n"
        "scheduler: {timezone: UTC, lease_seconds: 2, poll_seconds: 0.5}\n"
        "web: {enabled: false}\n"
        "logging: {level: info, format: json}\n"
    )


def _asks_for_the_job(body: dict[str, Any]) -> bool:
    return "kill9-report" in json.dumps(body.get("messages", []), ensure_ascii=False)


@pytest.mark.timeout(120)  # bounded; two cold `serve` starts on a loaded machine
async def test_a_run_in_flight_on_a_killed_leader_is_rerun_once(tmp_path: Path) -> None:
    asked: list[str] = []  # the job's model calls

    def respond(body: dict[str, Any]) -> Reply:
        if not _asks_for_the_job(body):
            return Reply(text="ok")
        asked.append("kill9-report")
        # the first run hangs until the kill; the re-run answers at once
        return Reply(text="早报：一切正常", delay=SLOW if len(asked) == 1 else 0.0)

    async with StampedLark() as lark, FakeLLM() as llm:
        llm.responder = respond
        port = free_port()
        replica = Replica(tmp_path, 0, _config(port, lark.domain, llm.base_url), port)
        settings = parse_settings(
            {"storage": {"url": f"sqlite:///{replica.home}/larkbot.db"},
             "scheduler": {"timezone": "UTC"}}
        )  # fmt: skip
        db = Database(settings.storage.url)
        writer = ScheduleService(settings, db, role="writer")  # like `larkbot chat`
        try:
            async with aiohttp.ClientSession() as http:
                await replica.start()
                await replica.ready(http)
                await writer.start()
                target = {"channel": "lark", "chat_id": CHAT, "thread_id": ""}
                creator = {"open_id": OWNER, "is_owner": True}
                await writer.create(
                    "daily", "kill9-report", interval_minutes=60, target=target, creator=creator
                )
                await writer.set_next_run_time("daily", datetime.now(UTC))
                await _until(lambda: len(asked) == 1, timeout=30)  # the run is in flight
                await replica.kill9()
                assert lark.arrivals.get(CHAT) is None  # nothing was delivered before the kill

                await replica.start()  # the same home: the same SQLite database
                await replica.ready(http)
                await lark.wait_for(lambda: CHAT in lark.arrivals, timeout=60)
                done = await _wait_done(db)
        finally:
            await writer.stop()
            await replica.stop()
            await db.close()
    assert len(asked) == 2  # the killed run and its one re-run
    assert len(lark.arrivals[CHAT]) == 1  # one message for the tick
    assert [m["body"]["text"] for m in lark.sent if m.get("receive_id") == CHAT] == [
        "⏰ 定时任务「daily」\n\n早报：一切正常"
    ]
    assert done.attempts == 2 and done.done_at is not None
    assert replica.log_events("schedule_rerun") == 1


async def _wait_done(db: Database) -> Any:
    """The tick's row once it says done (polled, bounded)."""
    t = scheduler_runs
    query = sa.select(t.c.attempts, t.c.done_at).where(t.c.job_id == "daily")
    found: Any = None
    for _ in range(300):  # ~30 s
        async with db.engine.connect() as conn:
            found = (await conn.execute(query)).first()
        if found is not None and found.done_at is not None:
            break
        await asyncio.sleep(0.1)  # poll interval of a bounded wait
    return found


async def _until(predicate: Callable[[], bool], timeout: float) -> None:
    """Poll `predicate` until true; TimeoutError after `timeout` seconds."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)  # poll interval of a bounded wait
