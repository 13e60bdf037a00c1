"""Turn control in Lark, end to end: recall, /stop, topics, the welcome, commands."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from larkbot.config import Settings
from larkbot.lark.claims.journal import SqlJournal
from larkbot.lark.events.welcome import BOT_ADDED, P2P_ENTERED
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import TOKEN, Served, bot_mention, message_event, settings_for

GROUP = {"chat_id": "oc_team", "chat_type": "group"}


def lark_event(event_type: str, **event: Any) -> dict[str, Any]:
    """A schema-2.0 envelope of any event type."""
    return {
        "schema": "2.0",
        "header": {
            "event_id": f"ev_{event_type}_{time.monotonic_ns()}",
            "event_type": event_type,
            "token": TOKEN,
            "create_time": str(int(time.time() * 1000)),
            "app_id": "cli_test",
        },
        "event": event,
    }


NEVER = 120.0  # seconds: a turn this slow is over only if the product stopped it


def slow_model(
    fake_llm: FakeLLM, first_delay: float, release: asyncio.Event | None = None
) -> asyncio.Event:
    """The first model call waits `first_delay` s, or until `release` is set (the event is
    set when it arrives)."""
    started = asyncio.Event()

    def respond(body: dict[str, Any]) -> Reply:
        first = not started.is_set()
        started.set()
        text = "first answer" if first else "later answer"
        if first and release is not None:
            return Reply(text=text, gate=release)
        return Reply(text=text, delay=first_delay * first)

    fake_llm.responder = respond
    return started


def plain(home: Path, fake_lark: FakeLark, fake_llm: FakeLLM) -> Settings:
    """Replies as plain messages: a turn past the 1 s streaming threshold (a loaded machine
    takes that long to hear of a recall) would otherwise show a live card, not an answer."""
    return settings_for(home, fake_lark.domain, fake_llm.base_url, lark={"streaming": False})


async def test_recall_of_a_running_turn_stops_it_unanswered(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    started = slow_model(fake_llm, NEVER)
    async with Served(plain(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("a long question", message_id="om_r1"))
        await asyncio.wait_for(started.wait(), 30)
        recall = lark_event("im.message.recalled_v1", message_id="om_r1", chat_id="oc_dm")
        assert (await s.post_event(recall))[0] == 200
        assert await s.app.idle(30)  # well before the model's 120 s
        assert await s.app.message_status("om_r1") == "done"  # never re-run
        assert await s.app.core.store.load("lark:oc_dm") == []  # and not kept in the history
    assert fake_lark.sent == []


SLOW_PLUGIN = """
import asyncio
from pathlib import Path
from tools.base import BaseTool

class Slow(BaseTool):
    name = "slow_lookup"
    description = "A lookup that takes long"
    parameters = {"type": "object", "properties": {}}

    async def run(self, **kw):
        home = Path(__file__).parent.parent
        try:  # the recall may land before the write below has returned here: still running
            await asyncio.to_thread((home / "started.fifo").write_text, "x")  # the test reads it
            await asyncio.sleep(120)
        except asyncio.CancelledError:
            (home / "tool-cancelled").write_text("x")
            raise
        return "done"
"""


async def test_recall_cancels_a_running_tool_too(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    (home / "tools").mkdir()
    (home / "tools" / "slow.py").write_text(SLOW_PLUGIN)
    os.mkfifo(home / "started.fifo")
    fake_llm.reply_tools(("slow_lookup", {}))
    async with Served(plain(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("look it up", message_id="om_t1"))
        await asyncio.wait_for(asyncio.to_thread((home / "started.fifo").read_text), 30)
        recall = lark_event("im.message.recalled_v1", message_id="om_t1", chat_id="oc_dm")
        assert await s.app.submit(recall) == "recalled"
        assert await s.app.idle(30)
    assert (home / "tool-cancelled").exists() and fake_lark.sent == []


async def test_recall_of_a_queued_turn_drops_it(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    release = asyncio.Event()  # the first answer ends once the second has been recalled
    started = slow_model(fake_llm, 0.0, release)
    async with Served(plain(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("first", message_id="om_q1"))
        await asyncio.wait_for(started.wait(), 30)
        await s.post_event(message_event("second", message_id="om_q2"))  # queued behind
        recall = lark_event("im.message.recalled_v1", message_id="om_q2", chat_id="oc_dm")
        assert await s.app.submit(recall) == "recalled"
        release.set()
        assert await s.app.idle(30)
        assert await s.app.message_status("om_q2") == "done"
        kept = [m["content"] for m in await s.app.core.store.load("lark:oc_dm")]
    assert kept == ["first", "first answer"]
    assert fake_lark.texts() == ["first answer"] and len(fake_llm.requests) == 1


async def test_recall_of_a_turn_running_on_another_replica_keeps_its_answer_back(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        elsewhere = SqlJournal(s.app.core.db)  # another replica on the same database
        assert await elsewhere.claim("om_far", "{}")
        recall = lark_event("im.message.recalled_v1", message_id="om_far", chat_id="oc_dm")
        assert await s.app.submit(recall) == "recalled elsewhere"
        assert await s.app.message_status("om_far") == "done"
        assert not await elsewhere.renew("om_far")  # its dispatcher now posts nothing
        unknown = lark_event("im.message.recalled_v1", message_id="om_never", chat_id="oc_dm")
        assert await s.app.submit(unknown) == "ignored"
        assert await s.app.message_status("om_never") is None


async def test_stop_cancels_the_running_answer(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    started = slow_model(fake_llm, NEVER)
    async with Served(plain(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("write a novel", message_id="om_s1"))
        await asyncio.wait_for(started.wait(), 30)
        await s.post_event(message_event("/停止", message_id="om_s2"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await s.app.idle(30)
    assert fake_lark.texts() == ["Stopped 1 answer(s)."]
    assert fake_lark.sent[0]["reply_to"] == "om_s2"


async def test_a_non_owner_cannot_stop_someone_elses_answer(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    started = slow_model(fake_llm, 1.0)
    async with Served(plain(home, fake_lark, fake_llm)) as s:
        ask = message_event("@_user_1 report", mentions=[bot_mention()], **GROUP)
        await s.post_event(ask)
        await asyncio.wait_for(started.wait(), 30)
        stop = message_event("@_user_1 /stop", sender="ou_guest", mentions=[bot_mention()], **GROUP)
        await s.post_event(stop)
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 2, timeout=30)
    assert fake_lark.texts() == ["first answer", "Only an owner can stop someone else's answer."]


async def test_topic_replies_stay_in_the_topic_and_follow_ups_need_no_mention(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("in the topic").reply_text("still here")
    topic = {**GROUP, "thread_id": "omt_topic", "root_id": "om_root"}
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        first = message_event("@_user_1 start", mentions=[bot_mention()], **topic)
        await s.post_event(first)
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await s.app.idle(30)
        assert (await s.post_event(message_event("and then?", **topic)))[0] == 200
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 2)
        outside = message_event("no mention, not in the topic", **GROUP)
        assert await s.app.submit(outside) == "ignored"
        other_topic = message_event("another topic", **{**GROUP, "thread_id": "omt_other"})
        assert await s.app.submit(other_topic) == "ignored"
    assert fake_lark.texts() == ["in the topic", "still here"]
    assert all(m["reply_in_thread"] for m in fake_lark.sent)


async def test_welcome_once_per_chat(home: Path, fake_lark: FakeLark, fake_llm: FakeLLM) -> None:
    fake_lark.users = {"ou_owner": {"name": "Olivia"}}
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        added = lark_event(BOT_ADDED, chat_id="oc_new", operator_id={"open_id": "ou_x"})
        assert (await s.post_event(added))[0] == 200
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert not await s.app.welcomer.greet(BOT_ADDED, {"chat_id": "oc_new"})  # a redelivery
        assert await s.app.welcomer.greet(P2P_ENTERED, {"chat_id": "oc_dm_new"})
        assert not await s.app.welcomer.greet(P2P_ENTERED, {"chat_id": "oc_dm_new"})
        other = lark_event("im.message.reaction.created_v1", message_id="om_1")
        assert await s.post_event(other) == (200, {"msg": "success"})  # acknowledged, quiet
    group, dm = fake_lark.sent
    assert (group["receive_id"], dm["receive_id"]) == ("oc_new", "oc_dm_new")
    assert "My owner is Olivia" in group["body"]["text"] and "/help" in group["body"]["text"]
    assert "@-mention me" in group["body"]["text"] and "just write" in dm["body"]["text"]


async def test_commands_in_chinese_and_new_in_groups_for_owners_only(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        for n, event in enumerate(
            [
                message_event("/帮助"),
                message_event("/新对话"),
                message_event(
                    "@_user_1 /new", sender="ou_guest", mentions=[bot_mention()], **GROUP
                ),
                message_event("@_user_1 /new", mentions=[bot_mention()], **GROUP),
            ],
            1,
        ):
            await s.post_event(event)
            await fake_lark.wait_for(lambda n=n: len(fake_lark.sent) == n)  # type: ignore[misc]
    help_zh, new_zh, refused, reset = fake_lark.texts()
    assert help_zh.startswith("我是 AI 助手") and "/停止" in help_zh
    assert new_zh == "已开始新对话。"
    assert "only an owner" in refused and reset == "Started a fresh conversation."
    assert fake_llm.requests == []
