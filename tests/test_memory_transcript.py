"""A transcript over signed webhooks, FakeLark and FakeLLM: Alice teaches the bot a preference in
one group; the next day (a restarted server, another group) it shapes her answer and nobody
else's; /memory shows it to her alone (in a direct chat) and /forget all removes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, bot_mention, message_event, settings_for

TEAM = {"chat_id": "oc_team", "chat_type": "group"}
PROJECT = {"chat_id": "oc_project", "chat_type": "group"}
DM = {"chat_id": "oc_dm_alice", "chat_type": "p2p"}
PREFERENCE = "Alice wants answers as a Markdown table"


async def say(s: Served, fake_lark: FakeLark, who: str, text: str, chat: dict[str, str]) -> str:
    """Alice or Bob @-mentions the bot; the bot's reply text."""
    before = len(fake_lark.sent)
    mention = chat["chat_type"] == "group"
    event = message_event(
        f"@_user_1 {text}" if mention else text,
        sender=who,
        mentions=[bot_mention()] if mention else None,
        **chat,
    )
    assert (await s.post_event(event))[0] == 200
    await fake_lark.wait_for(lambda: len(fake_lark.sent) > before, timeout=30)
    assert await s.app.idle(30)
    return str(fake_lark.sent[-1]["content"])


def system_of(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


async def test_a_preference_taught_in_one_chat_is_used_the_next_day_in_another(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.users = {"ou_alice": {"name": "Alice"}, "ou_bob": {"name": "Bob"}}
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    fake_llm.reply_tools(("memory_save", {"content": PREFERENCE, "pinned": True}))
    fake_llm.reply_text("Got it, tables from now on.")
    async with Served(settings) as s:
        await say(s, fake_lark, "ou_alice", "please always answer me with a table", TEAM)
    fake_llm.reply_text("| item | owner |").reply_text("The plan has three parts.")
    async with Served(settings) as s:  # the next day: a restarted server
        await say(s, fake_lark, "ou_alice", "summarise the Q3 plan", PROJECT)
        await say(s, fake_lark, "ou_bob", "summarise the Q3 plan", PROJECT)
        in_group = await say(s, fake_lark, "ou_alice", "/memory", PROJECT)
        listing = await say(s, fake_lark, "ou_alice", "/memory", DM)
        bobs = await say(s, fake_lark, "ou_bob", "/记忆", {**DM, "chat_id": "oc_dm_bob"})
        forgot = await say(s, fake_lark, "ou_alice", "/forget all", PROJECT)
    alice_next_day, bob_turn = fake_llm.requests[2], fake_llm.requests[3]
    assert PREFERENCE in system_of(alice_next_day)  # recalled without any tool call
    assert "saved by Alice (not an owner)" in system_of(alice_next_day)
    assert "markdown table" not in str(bob_turn["messages"]).lower()  # nothing of Alice's
    assert PREFERENCE not in in_group and "1 memories about you" in in_group  # the group reads it
    assert PREFERENCE in listing
    assert PREFERENCE not in bobs
    assert "Forgot 1 memories" in forgot
