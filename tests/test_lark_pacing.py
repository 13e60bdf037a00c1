"""Send pacing against FakeLark, which refuses a 6th message within a window to one chat (230020).

Windows are scaled down (0.1 s instead of Lark's 1 s) so a burst of 50 takes about a second;
what is checked are counts and order, not milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.pacing import Pacer, SlidingWindow
from larkbot.lark.api.transport import RetryPolicy
from tests.fakes.lark_server import FakeLark

WINDOW = 0.1
CHAT = "oc_burst"


@pytest.fixture
async def paced() -> AsyncIterator[tuple[FakeLark, LarkClient]]:
    """FakeLark allowing 5 messages per 0.1 s to one chat, and a client paced the same way."""
    async with FakeLark(chat_window=WINDOW) as fake, httpx.AsyncClient() as http:
        for i in range(50):
            fake.add_message(f"om_q{i}", chat_id=CHAT)
        retry = RetryPolicy(attempts=6, backoff_base=0.01)
        client = LarkClient(http, fake.domain, fake.app_id, fake.app_secret, retry=retry)
        client.transport.pacer = Pacer(per_chat=5, window=WINDOW)
        yield fake, client


async def burst(client: LarkClient, n: int = 50) -> None:
    """`n` answers to one chat, all started at once, in order."""
    tasks = [
        asyncio.create_task(client.reply(f"om_q{i}", "text", {"text": f"answer {i}"}, chat_id=CHAT))
        for i in range(n)
    ]
    await asyncio.wait_for(asyncio.gather(*tasks), 60)


async def test_a_burst_of_50_answers_to_one_chat_arrives_complete_and_in_order(
    paced: tuple[FakeLark, LarkClient],
) -> None:
    fake, client = paced
    await burst(client)
    assert fake.texts() == [f"answer {i}" for i in range(50)]
    assert fake.retried_early == 0
    # paced like the platform: a few stray refusals when a loaded machine bunches paced sends
    # together, never a storm (unpaced, 45 of the 50 are refused at once)
    assert len(fake.rate_limited) <= 10, fake.rate_limited


async def test_unpaced_sends_are_refused_then_retried_after_the_advertised_reset(
    paced: tuple[FakeLark, LarkClient],
) -> None:
    fake, client = paced
    client.transport.pacer = Pacer(1000, 1000, messages_per_minute=10**6)  # as if pacing were off
    await burst(client, 30)
    assert fake.rate_limited, "the fake enforces Lark's per-chat limit"
    assert all(r["reset"] > 0 for r in fake.rate_limited)
    assert fake.retried_early == 0, "every retry waited out x-ogw-ratelimit-reset"
    assert fake.texts() == [f"answer {i}" for i in range(30)]  # still complete and in order


async def test_429_waits_for_x_ogw_ratelimit_reset(paced: tuple[FakeLark, LarkClient]) -> None:
    fake, client = paced
    reply = "POST /open-apis/im/v1/messages/{id}/reply"
    fake.fail_next(reply, status=429, headers={"x-ogw-ratelimit-reset": "0.3"})
    await client.token()
    started = time.monotonic()
    await client.reply("om_q0", "text", {"text": "after the reset"}, chat_id=CHAT)
    assert time.monotonic() - started >= 0.3
    assert fake.texts() == ["after the reset"]
    fake.fail_next(reply, status=400, code=230020, headers={"x-ogw-ratelimit-reset": "0.2"})
    started = time.monotonic()
    await client.reply("om_q1", "text", {"text": "230020 too"}, chat_id=CHAT)
    assert time.monotonic() - started >= 0.2
    assert fake.texts()[-1] == "230020 too"


async def test_a_busy_chat_does_not_hold_up_another(paced: tuple[FakeLark, LarkClient]) -> None:
    fake, client = paced
    busy = asyncio.create_task(burst(client, 50))  # >= 1 s at 5 per 0.1 s: room for the quiet one
    await fake.wait_for(lambda: len(fake.sent) >= 3)
    await client.send("oc_quiet", "text", {"text": "other chat"})
    assert len([m for m in fake.sent if m["chat_id"] == CHAT]) < 50, "sent while busy waited"
    await busy
    assert fake.texts().count("other chat") == 1


def test_sliding_window_admits_limit_per_window() -> None:
    window = SlidingWindow(5, 1.0)
    delays = [window.delay() for _ in range(11)]
    assert delays[:5] == [0.0] * 5
    assert all(1.0 <= d <= 1.1 for d in delays[5:10])  # the 6th-10th wait a window (+margin)
    assert 2.0 <= delays[10] <= 2.2
