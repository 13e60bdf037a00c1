"""The journal's storage goes away mid-run (a Redis restart): no message is lost.

Found by the soak (bench/soak.py): during a Redis restart some messages were acknowledged
and never answered. A real redis-server is stopped and restarted under a served App.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog

from bench.soak_rig import Redis
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import Served, message_event, settings_for


@pytest.fixture(autouse=True)
def plain_tracebacks() -> Iterator[None]:
    """Tracebacks as plain text, as `serve` logs them: the console renderer's rich tracebacks
    (every frame's locals, redis-py's included) held the loop for seconds per warning."""
    old = structlog.get_config()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(),
        ]
    )
    yield
    structlog.configure(**old)


@pytest.fixture
async def redis(tmp_path: Path) -> AsyncIterator[Redis]:
    """A restartable redis-server (AOF on, like docker-compose.yml's)."""
    server = Redis(tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _served(home: Path, lark: FakeLark, llm: FakeLLM, redis: Redis) -> Served:
    settings = settings_for(home, lark.domain, llm.base_url, storage={"redis_url": redis.url})
    return Served(settings)


def _replies_to(lark: FakeLark, message_id: str) -> int:
    return sum(1 for m in lark.sent if m["reply_to"] == message_id)


async def test_redelivery_after_a_failed_claim_is_claimed_again(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, redis: Redis
) -> None:
    # Regression: the message whose claim failed (503) stayed "held" behind the running turn of
    # its session, so Lark's redelivery to the same replica was answered 200 "duplicate" and
    # the message was never answered.
    asked = asyncio.Event()

    def respond(body: object) -> Reply:
        asked.set()
        return Reply(text="answer", delay=1.5)

    fake_llm.responder = respond
    async with _served(home, fake_lark, fake_llm, redis) as s:
        assert (await s.post_event(message_event("one", message_id="om_a")))[0] == 200
        await asyncio.wait_for(asked.wait(), 10)
        await redis.stop()  # the first turn is running; Redis goes away
        second = message_event("two", message_id="om_b")  # same chat: queued behind om_a
        assert (await s.post_event(second))[0] == 503  # Lark will redeliver
        await redis.start()
        assert (await s.post_event(second))[0] == 200  # the redelivery
        await fake_lark.wait_for(lambda: _replies_to(fake_lark, "om_b") == 1, timeout=20)
        assert await s.app.idle(30)
    assert _replies_to(fake_lark, "om_a") == 1 and _replies_to(fake_lark, "om_b") == 1
