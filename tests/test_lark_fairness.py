"""Fairness: a flooding non-owner is limited with a clear reply and never delays an owner.

The served test drives the real aiohttp app on 127.0.0.1 (signed events → FakeLLM → FakeLark):
twelve non-owners flood the bot from their DMs while the model holds every non-owner turn; the
owner's DM, sent afterwards, must be answered while those turns are still held.
"""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path
from typing import Any

from larkbot.config_sections import LimitsConfig
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.turns.fairness import SenderLimits, TurnSlots
from larkbot.lark.turns.routing import Queued, enqueue_position
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.lark_harness import Served, message_event, settings_for

WAIT = 30  # seconds: a bound that only a broken product reaches, even on a loaded machine


def _last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"]) if users else ""


async def test_flooding_non_owners_do_not_delay_the_owner_beyond_one_turn(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    flood_starts: list[str] = []
    # Non-owner turns are held by the model until the owner has been answered: an owner queued
    # behind the flood would never be, and the bounded wait below fails.
    owner_answered, slots_full = asyncio.Event(), asyncio.Event()

    def respond(body: dict[str, Any]) -> Reply:
        text = _last_user_text(body)
        if "owner question" in text:
            return Reply(text="owner answer")
        flood_starts.append(text)
        if len(flood_starts) == 3:  # every slot non-owners may use is taken
            slots_full.set()
        return Reply(text="flood answer", gate=owner_answered)

    fake_llm.responder = respond
    settings = settings_for(
        home,
        fake_lark.domain,
        fake_llm.base_url,
        lark={"max_concurrent_turns": 4},
        limits={"owner_reserved_turns": 1},
        server={"drain_seconds": 0.2},
    )
    async with Served(settings) as s:
        outcomes = []
        for n in range(12):  # 12 senders x 4 messages: 36 accepted turns, 12 refused
            for k in range(4):
                event = message_event(
                    f"flood {n}.{k}", chat_id=f"oc_flood_{n}", sender=f"ou_flood_{n}"
                )
                outcomes.append(await s.post_event(event))
        assert all(status == 200 for status, _ in outcomes)
        await asyncio.wait_for(slots_full.wait(), WAIT)
        await s.post_event(message_event("owner question", chat_id="oc_owner_dm"))
        await fake_lark.wait_for(lambda: any("owner answer" in t for t in fake_lark.texts()), WAIT)
        # No flood turn has ended yet, so each one the model saw still holds its slot: more
        # than three would mean non-owners used more than their 4 - 1 slots.
        assert len(flood_starts) <= 3, flood_starts
        owner_answered.set()

        def notices() -> list[dict[str, Any]]:
            return [m for m in fake_lark.sent if "earlier messages" in str(m["body"])]

        await fake_lark.wait_for(lambda: len(notices()) >= 12, WAIT)
        assert len(notices()) == 12  # one per flooding sender, not one per refused message
        assert len({m["reply_to"] for m in notices()}) == 12
        await s.close(drain=0.1)


async def test_one_reply_runs_at_most_the_cap_of_tool_calls(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    calls = [FakeToolCall("shell", {"command": f"echo call{n}"}) for n in range(40)]
    fake_llm.add(Reply(tool_calls=calls))
    fake_llm.reply_text("done")
    settings = settings_for(
        home, fake_lark.domain, fake_llm.base_url, agent={"max_tool_calls_per_reply": 16}
    )
    async with Served(settings) as s:
        await s.post_event(message_event("run them"))
        await fake_lark.wait_for(lambda: "done" in fake_lark.texts(), 30)
    results = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 40
    ran = [r for r in results if "[exit code 0]" in r["content"]]
    refused = [r for r in results if "at most 16 run per reply" in r["content"]]
    assert len(ran) == 16 and len(refused) == 24
    assert all("call" + str(n) in ran[n]["content"] for n in range(16))


def test_sender_limits_count_queued_turns_and_turns_per_minute() -> None:
    now = [0.0]
    cfg = LimitsConfig(queued_per_sender=2, turns_per_minute_per_sender=3, queued_per_chat=50)
    limits = SenderLimits(lambda: cfg, clock=lambda: now[0])
    assert limits.admit("ou_a", "oc_1") is None
    assert limits.admit("ou_a", "oc_1") is None
    assert "earlier messages" in (limits.admit("ou_a", "oc_1") or "")
    assert limits.admit("ou_b", "oc_1") is None  # another sender is not affected
    limits.finished("ou_a", "oc_1")
    assert limits.admit("ou_a", "oc_1") is None  # third start within the minute
    limits.finished("ou_a", "oc_1")
    assert "last minute" in (limits.admit("ou_a", "oc_1") or "")
    now[0] = 61.0
    assert limits.admit("ou_a", "oc_1") is None  # the window moved on
    assert limits.should_notify("ou_a") and not limits.should_notify("ou_a")
    now[0] = 200.0
    assert limits.should_notify("ou_a")


def test_chat_limits_bound_many_senders_in_one_chat() -> None:
    cfg = LimitsConfig(queued_per_chat=3, turns_per_minute_per_chat=100)
    limits = SenderLimits(lambda: cfg)
    assert all(limits.admit(f"ou_{n}", "oc_group") is None for n in range(3))
    assert "too many questions waiting" in (limits.admit("ou_9", "oc_group") or "")
    assert limits.admit("ou_9", "oc_other") is None


async def test_turn_slots_serve_owners_first_and_keep_their_reserve() -> None:
    slots = TurnSlots(total=3, reserved=1)
    order: list[str] = []
    release = asyncio.Event()

    async def turn(name: str, owner: bool) -> None:
        async with slots.hold(owner):
            order.append(name)
            await release.wait()

    others = [asyncio.create_task(turn(f"other{n}", False)) for n in range(4)]
    await asyncio.sleep(0)
    assert order == ["other0", "other1"]  # the third slot is the owners' reserve
    owner = asyncio.create_task(turn("owner", True))
    await asyncio.sleep(0)
    assert order[-1] == "owner"  # straight into the reserve, ahead of waiting non-owners
    late_owner = asyncio.create_task(turn("owner2", True))
    await asyncio.sleep(0)
    assert "owner2" not in order  # every slot is taken
    release.set()
    await asyncio.gather(*others, owner, late_owner)
    assert order.index("owner2") < order.index("other2")  # owners are woken first
    assert slots.running == 0 and slots.running_others == 0


async def test_a_cancelled_waiter_gives_its_place_back() -> None:
    slots = TurnSlots(total=1, reserved=0)
    gate = asyncio.Event()

    async def hold() -> None:
        async with slots.hold(False):
            await gate.wait()

    first = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    gate.set()
    await first
    assert slots.running == 0
    async with slots.hold(False):
        assert slots.running == 1


async def test_an_owner_goes_ahead_of_waiting_non_owners_but_not_the_head() -> None:
    def item(name: str, owner: bool) -> Queued:
        return Queued(InboundMessage(name, "oc_g", "group", name, name), owner=owner)

    queue = deque([item("running", False), item("owner1", True), item("other1", False)])
    assert enqueue_position(queue, owner=True) == 2  # after the running head and owner1
    assert enqueue_position(queue, owner=False) == 3
    assert enqueue_position(deque([item("running", False)]), owner=True) == 1
