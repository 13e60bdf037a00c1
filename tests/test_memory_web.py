"""`GET /api/memory`: the web owner sees their own memories and the chats', nobody else's."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.memory_rig import ALICE, person
from tests.web_harness import AUTH, chat_turn, web_settings


async def test_the_memory_view_shows_the_owners_and_the_chats_memories(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_tools(("memory_save", {"content": "The owner prefers metric units"}))
    fake_llm.reply_text("Noted.")
    settings = web_settings(home, fake_llm.base_url, owner={"open_ids": ["ou_owner"]})
    async with Served(settings) as s:
        assert s.http is not None
        await chat_turn(s.http, s.url(""), "remember: I prefer metric units")
        memory = s.app.core.memory
        assert memory is not None
        await memory.save(person(ALICE), "Alice's private fact")
        await memory.save(person(ALICE), "The team standup is at 10:00", "chat")
        async with s.http.get(s.url("/api/memory")) as r:
            assert r.status == 401
        async with s.http.get(s.url("/api/memory"), headers=AUTH) as r:
            body = await r.json()
    shown = {m["content"]: m for m in body["memories"]}
    assert set(shown) == {"The owner prefers metric units", "The team standup is at 10:00"}
    assert shown["The team standup is at 10:00"]["author"] == "Alice"
    assert not shown["The team standup is at 10:00"]["author_owner"]
