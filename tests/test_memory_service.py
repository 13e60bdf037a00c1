"""MemoryService on SQLite: limits, forget, secrets refused, scheduled jobs and the web view."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from larkbot.context import RequestContext
from larkbot.memory import MemoryRefused
from tests.core_helpers import collect
from tests.fakes.llm import FakeLLM
from tests.memory_rig import ALICE, BOB, OWNER_ID, lark_agent, memory_core, person


async def test_per_person_count_and_size_limits(fake_llm: FakeLLM, tmp_path: Path) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path, max_per_person=3, max_chars=40)
    service = core.runtime.services["memory"]
    alice = person(ALICE)
    for i in range(3):
        await service.save(alice, f"fact number {i}")
    with pytest.raises(MemoryRefused, match="full"):
        await service.save(alice, "one too many")
    with pytest.raises(MemoryRefused, match="at most 40"):
        await service.save(person(BOB), "x" * 41)
    bob = await service.save(person(BOB), "Bob still has room")
    again = await service.save(alice, "fact number 1")  # a repeat is no new memory
    await core.aclose()
    assert bob.author_id == BOB
    assert again.content == "fact number 1"


async def test_secrets_are_refused(fake_llm: FakeLLM, tmp_path: Path) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    for secret in ("my api key is sk-abcdefghijklmnopqrstu", "password: hunter22", "密码是 123456"):
        with pytest.raises(MemoryRefused, match="secret"):
            await service.save(person(ALICE), secret)
    await core.aclose()


async def test_forget_one_and_all_only_touch_the_speakers_memories(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    alice, bob = person(ALICE), person(BOB)
    a1 = await service.save(alice, "Alice likes tea")
    await service.save(alice, "Alice works on billing")
    shared = await service.save(alice, "The group meets Mondays", "chat")
    b1 = await service.save(bob, "Bob likes coffee")
    with pytest.raises(MemoryRefused, match="may forget"):
        await service.forget(bob, a1.id)
    with pytest.raises(MemoryRefused, match="may forget"):
        await service.forget(bob, shared.id)  # another member's chat memory
    await service.forget(alice, a1.id)
    gone = await service.forget_all(alice)
    left = await service.visible(bob)
    await core.aclose()
    assert gone == 2  # billing and the chat memory she saved
    assert [m.id for m in left] == [b1.id]


async def test_a_scheduled_job_recalls_only_its_creators_memories(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    await service.save(person(ALICE), "Alice's daily report goes to finance")
    job = dataclasses.replace(person(BOB), scheduled=True, session_id="schedule:bob-daily")
    recalled = await service(job, "daily report")
    await core.aclose()
    assert "finance" not in recalled.text


async def test_the_owners_web_view_has_their_own_and_chat_memories_only(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    await service.save(person(OWNER_ID, owner=True), "The owner lives in Hangzhou")
    await service.save(person(ALICE), "Alice lives in Beijing")
    await service.save(person(ALICE), "This group plans the offsite", "chat")
    web = RequestContext.local_owner("web:1", "web")
    shown = [m.content for m in await service.for_web(service.person(web))]
    await core.aclose()
    assert shown == ["The owner lives in Hangzhou", "This group plans the offsite"]


async def test_chinese_memories_are_found_by_chinese_words(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path, pinned=0)
    service = core.runtime.services["memory"]
    alice = person(ALICE)
    await service.save(alice, "我喜欢用表格回答问题")
    await service.save(alice, "周末常去爬山")
    found = await service.search(alice, "回答的时候用表格")
    recalled = await service(alice, "下周的天气怎么样")
    await core.aclose()
    assert [m.content for m in found] == ["我喜欢用表格回答问题"]
    assert "表格" not in recalled.text


async def test_memory_off_means_no_tools_and_nothing_in_the_prompt(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path, enabled=False)
    fake_llm.reply_text("hi")
    await collect(lark_agent(core), "hello", person(ALICE))
    await core.aclose()
    request = fake_llm.requests[0]
    assert core.memory is None
    assert not [t for t in request["tools"] if t["function"]["name"].startswith("memory_")]
    assert "memory_save" not in request["messages"][0]["content"]
