"""Models in Lark: the thinking panel (DMs only by default), /status for owners, usage recorded."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, bot_mention, message_event, settings_for

THOUGHT = "The user greets me; a short friendly answer fits."


async def test_thinking_panel_in_dm_not_in_group(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("hi there", reasoning=THOUGHT)
    fake_llm.reply_text("hello group", reasoning=THOUGHT)
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, llm={"show_thinking": "dm"})
    async with Served(settings) as s:
        await s.post_event(message_event("hello", message_id="om_dm"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 2)
        group = {"chat_id": "oc_group", "chat_type": "group"}
        event = message_event("@_user_1 hi", mentions=[bot_mention()], **group)
        await s.post_event(event)
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 3)
        assert await s.app.idle(30)
    answer, panel, group_answer = fake_lark.sent
    assert answer["body"] == {"text": "hi there"}  # the thought is never the answer
    element = panel["body"]["body"]["elements"][0]
    assert panel["msg_type"] == "interactive" and element["tag"] == "collapsible_panel"
    assert element["expanded"] is False and element["elements"][0]["content"] == THOUGHT
    assert group_answer["body"] == {"text": "hello group"}


async def test_status_for_owners_only(home: Path, fake_lark: FakeLark, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("first answer")
    settings = settings_for(
        home, fake_lark.domain, fake_llm.base_url, llm={"model": "deepseek-chat"}
    )
    async with Served(settings) as s:
        await s.post_event(message_event("hello"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        await s.post_event(message_event("/status"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 2)
        await s.post_event(message_event("/status", sender="ou_stranger"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 3)
        assert await s.app.idle(30)
    status = str(fake_lark.sent[1]["body"])
    assert "Model: deepseek-chat" in status and "This chat: 1 requests" in status
    refused = str(fake_lark.sent[2]["body"])
    assert "Only an owner" in refused and "Model:" not in refused
