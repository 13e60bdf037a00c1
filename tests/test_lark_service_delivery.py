"""Exactly-once turns, ordering, concurrency, slow models and Lark faults, end to end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import Served, message_event, redis_server, settings_for

REPLY = "POST /open-apis/im/v1/messages/{id}/reply"
WAIT = 30  # seconds: a bound that only a broken product reaches, even on a loaded machine


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A redis-server for this test (skipped only when the binary is not installed)."""
    with redis_server(tmp_path) as url:
        yield url


async def test_same_event_four_times_then_after_restart(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("once", delay=0.2)
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    event = message_event("hello", message_id="om_dup")
    async with Served(settings) as s:
        results = await asyncio.gather(*(s.post_event(event) for _ in range(4)))
        assert [r[0] for r in results] == [200] * 4
        assert await s.app.idle(WAIT)
    async with Served(settings) as s:  # a new process on the same database
        assert (await s.post_event(event))[0] == 200
        assert await s.app.idle(WAIT)
    assert [m["reply_to"] for m in fake_lark.sent] == ["om_dup"]
    assert len(fake_llm.requests) == 1


async def test_turn_killed_midway_is_answered_once_after_restart(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    asked = asyncio.Event()
    never = asyncio.Event()  # the first answer never ends: only the shutdown stops that turn
    replies = iter([Reply(text="too late", gate=never), Reply(text="answered after restart")])

    def respond(body: object) -> Reply:
        asked.set()
        return next(replies)

    fake_llm.responder = respond
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    s = Served(settings)
    await s.__aenter__()
    assert (await s.post_event(message_event("slow one", message_id="om_killed")))[0] == 200
    await asyncio.wait_for(asked.wait(), WAIT)  # the model is thinking
    await s.close(drain=0.05)  # shutdown interrupts the turn mid-way
    assert fake_lark.sent == []
    async with Served(settings) as again:  # recovery at start retakes the claim
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1, timeout=WAIT)
        assert await again.app.idle(WAIT)
        assert await again.app.message_status("om_killed") == "done"
    assert fake_lark.texts() == ["answered after restart"]


async def test_slow_model_does_not_slow_the_webhook(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    thinking = asyncio.Event()  # the model's answer ends only once the webhook has answered
    fake_llm.add(Reply(text="finally", gate=thinking))
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        # A webhook that waited for the model would wait for ever: the bound only catches that.
        status, _ = await asyncio.wait_for(s.post_event(message_event("take your time")), WAIT)
        assert status == 200 and fake_lark.sent == []
        thinking.set()
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1, timeout=WAIT)


async def test_one_chat_in_order_ten_chats_at_once(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("first", delay=0.4)
    fake_llm.reply_text("second")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        await s.post_event(message_event("one", chat_id="oc_x", message_id="om_a"))
        await s.post_event(message_event("two", chat_id="oc_x", message_id="om_b"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 2, WAIT)
        assert [(m["reply_to"], m["body"]["text"]) for m in fake_lark.sent] == [
            ("om_a", "first"),
            ("om_b", "second"),
        ]
        # No answer ends before all ten turns are asking the model at once: turns run one after
        # the other would leave the first waiting for ever, and the bounded wait fails.
        all_asking, asking = asyncio.Event(), []

        def respond(body: object) -> Reply:
            asking.append(body)
            if len(asking) == 10:
                all_asking.set()
            return Reply(text="parallel", gate=all_asking)

        fake_llm.responder = respond
        events = [message_event(f"hi {i}", chat_id=f"oc_{i}") for i in range(10)]
        await asyncio.gather(*(s.post_event(e) for e in events))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 12, timeout=WAIT)
        assert fake_lark.texts()[2:] == ["parallel"] * 10


async def test_lark_429_twice_reply_arrives_once(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("despite the rate limit")
    fake_lark.fail_next(REPLY, status=429, times=2, headers={"x-ogw-ratelimit-reset": "0"})
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert (await s.post_event(message_event("hi", message_id="om_429")))[0] == 200
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await s.app.idle(WAIT)
    replies = [r for r in fake_lark.requests if r.route.endswith("/reply")]
    assert len(replies) == 3 and len(fake_lark.sent) == 1
    assert len({r.json["uuid"] for r in replies}) == 1  # the same idempotency key each time


async def test_two_replicas_share_the_claim_through_redis(
    home: Path,
    tmp_path: Path,
    redis_url: str,
    fake_lark: FakeLark,
    fake_llm: FakeLLM,
) -> None:
    fake_llm.responder = lambda body: Reply(text="from one replica", delay=0.1)
    shared = {"redis_url": redis_url}
    a = settings_for(home, fake_lark.domain, fake_llm.base_url, storage=shared)
    b_db = {"url": f"sqlite:///{tmp_path}/replica-b.db", **shared}
    b = settings_for(home, fake_lark.domain, fake_llm.base_url, storage=b_db)
    event = message_event("hello replicas", message_id="om_replicas")
    async with Served(a) as ra, Served(b) as rb:
        posts = [r.post_event(event) for r in (ra, rb, ra, rb)]
        assert [p[0] for p in await asyncio.gather(*posts)] == [200] * 4
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await ra.app.idle(WAIT) and await rb.app.idle(WAIT)
        assert await rb.app.message_status("om_replicas") == "done"
    assert len(fake_lark.sent) == 1 and len(fake_llm.requests) == 1
