"""A burst through the real webhook: every event acknowledged with 200, every redelivery
refused as a duplicate, each message answered exactly once; a drain releases the claims of the
turns it stops, so recovery takes them at once rather than after their lease."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import Served, message_event, settings_for

WAIT = 15.0  # bound on every wait; generous for a loaded 2-core machine
BURST = 8


def event(n: int) -> dict[str, Any]:
    """Message `n` in a chat of its own (so no turn waits behind another in its session)."""
    return message_event(f"burst-{n}", chat_id=f"oc_burst_{n}", message_id=f"om_burst_{n}")


async def post_all(s: Served, ns: range) -> list[tuple[int, Any]]:
    """POST events `ns` at once, each sealed like Lark."""
    return await asyncio.gather(*(s.post_event(event(n)) for n in ns))


async def test_a_burst_and_its_redelivery_are_answered_once_each(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda body: Reply(text="answer")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert [status for status, _ in await post_all(s, range(BURST))] == [200] * BURST
        assert [status for status, _ in await post_all(s, range(BURST))] == [200] * BURST
        await fake_lark.wait_for(lambda: len(fake_lark.sent) >= BURST, timeout=WAIT)
        assert await s.app.idle(WAIT)
    assert Counter(m["reply_to"] for m in fake_lark.sent) == Counter(
        f"om_burst_{n}" for n in range(BURST)
    )  # one answer each


async def test_drain_releases_the_claims_of_the_turns_it_stops(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    never = asyncio.Event()  # the model never finishes: every turn is running or queued
    fake_llm.responder = lambda body: Reply(text="…", gate=never)
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert [status for status, _ in await post_all(s, range(BURST))] == [200] * BURST
        assert not await s.app.idle(0)  # every turn queued or running
        assert await s.app.drain(0.01) is False  # the turns are cancelled
        assert await s.app.idle(0)
        # each claim was released, so recovery can take it at once rather than after its lease
        retaken = await s.app.journal.reclaim_expired(limit=BURST + 1)
        assert sorted(json.loads(p)["message_id"] for p in retaken) == sorted(
            f"om_burst_{n}" for n in range(BURST)
        )
    assert fake_lark.sent == []
