"""Memory through the real core: per-person isolation in a group, chat scope, recall without a
tool call (checked in the model request the FakeLLM receives), and the bar untrusted memories
raise."""

from __future__ import annotations

from pathlib import Path

from larkbot import metrics
from larkbot.events import ConsentRequested, FinalAnswer
from larkbot.memory import search
from tests.core_helpers import ScriptedConsent, collect
from tests.fakes.llm import FakeLLM
from tests.memory_rig import (
    ALICE,
    BOB,
    OTHER_GROUP,
    OWNER_ID,
    lark_agent,
    memory_core,
    person,
    system_prompt,
)


async def test_a_memory_reaches_only_its_persons_turns_in_a_group(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    agent = lark_agent(core)
    fake_llm.reply_tools(("memory_save", {"content": "Alice is vegetarian"}))
    fake_llm.reply_text("noted")
    await collect(agent, "remember: I am vegetarian", person(ALICE))
    fake_llm.reply_text("salad")
    await collect(agent, "what should I eat for lunch?", person(ALICE))
    fake_llm.reply_text("steak")
    await collect(agent, "what should I eat for lunch?", person(BOB))
    await core.aclose()
    alice_turn, bob_turn = fake_llm.requests[2], fake_llm.requests[3]
    assert "Alice is vegetarian" in system_prompt(alice_turn)  # recalled, no tool call asked
    assert "vegetarian" not in str(bob_turn["messages"])
    assert "memory_save" in system_prompt(bob_turn)  # the rules are there for everyone


async def test_chat_memory_is_recalled_for_everyone_in_that_chat_only(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    agent = lark_agent(core)
    fake_llm.reply_tools(
        ("memory_save", {"content": "Release freeze starts Friday", "scope": "chat"})
    )
    fake_llm.reply_text("saved")
    await collect(agent, "remember for this group: release freeze starts Friday", person(ALICE))
    fake_llm.reply_text("a")
    await collect(agent, "when is the release freeze?", person(BOB))
    fake_llm.reply_text("b")
    await collect(agent, "when is the release freeze?", person(ALICE, OTHER_GROUP))
    await core.aclose()
    bob_here, alice_elsewhere = (
        system_prompt(fake_llm.requests[2]),
        system_prompt(fake_llm.requests[3]),
    )
    assert "Release freeze starts Friday" in bob_here
    assert "saved by Alice (not an owner)" in bob_here  # marked as hers, not the bot's rule
    assert "Release freeze" not in alice_elsewhere


async def test_a_chat_memory_a_member_wrote_makes_the_owners_side_effect_ask(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    consent = ScriptedConsent()
    agent = lark_agent(core, consent)
    fake_llm.reply_tools(
        ("memory_save", {"content": "Always archive notes into knowledge", "scope": "chat"})
    )
    fake_llm.reply_text("ok")
    await collect(agent, "remember that notes are archived", person(BOB))
    write = ("knowledge_add", {"title": "standup", "content": "archive notes"})
    fake_llm.reply_tools(write)
    fake_llm.reply_text("done")
    owner = person(OWNER_ID, owner=True, session="owner-turn")
    events = await collect(agent, "archive the standup notes", owner)
    fake_llm.reply_tools(write)
    fake_llm.reply_text("done")
    calm = person(OWNER_ID, "oc_quiet", owner=True, session="owner-alone")
    calm_events = await collect(agent, "archive the standup notes", calm)
    await core.aclose()
    asked = [e for e in events if isinstance(e, ConsentRequested)]
    assert len(asked) == 1 and consent.asked[0].sources
    assert "saved by Bob (not an owner)" in consent.asked[0].sources[0]
    assert not [e for e in calm_events if isinstance(e, ConsentRequested)]
    assert isinstance(calm_events[-1], FinalAnswer)


async def test_memory_saved_after_reading_untrusted_text_is_marked(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    owner = person(OWNER_ID, owner=True).with_untrusted("web_fetch https://example.test")
    saved = await service.save(owner, "Deploys go through the blue pipeline")
    recalled = await service(person(OWNER_ID, owner=True), "deploys")
    unrelated = await service(person(OWNER_ID, owner=True), "lunch ideas")
    await core.aclose()
    assert saved.untrusted and not saved.trusted
    assert recalled.untrusted == (
        f"memory {saved.id} saved while untrusted text was in the conversation",
    )
    assert "while reading untrusted text" in recalled.text
    assert unrelated.untrusted == ()  # not recalled in every turn, only when it is the topic


async def test_recall_stays_within_its_token_budget(fake_llm: FakeLLM, tmp_path: Path) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path, recall_tokens=200)
    service = core.runtime.services["memory"]
    alice = person(ALICE)
    for i in range(40):
        await service.save(alice, f"Project {i} uses the Go language and deploys on Kubernetes")
    seen = metrics.REGISTRY.get_sample_value
    before = [seen(f"larkbot_memory_recall_{m}_count") or 0 for m in ("seconds", "tokens")]
    recalled = await service(alice, "which language does the project use?")
    await core.aclose()
    assert 0 < recalled.count < 40
    assert recalled.tokens <= 200
    after = [seen(f"larkbot_memory_recall_{m}_count") or 0 for m in ("seconds", "tokens")]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1]  # this recall, observed


async def test_one_members_memory_results_stay_out_of_the_others_turns_in_a_shared_history(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    agent = lark_agent(core)
    await core.runtime.services["memory"].save(
        person(ALICE, "oc_dm_alice"), "Alice's salary is private"
    )
    shared = "oc_group:shared"
    fake_llm.reply_tools(("memory_search", {"query": "salary"}))
    fake_llm.reply_text("I found one thing.")
    await collect(agent, "what do you remember about my salary?", person(ALICE, session=shared))
    fake_llm.reply_text("a").reply_text("b")
    await collect(agent, "anything new?", person(BOB, session=shared))
    await collect(agent, "anything new?", person(OWNER_ID, owner=True, session=shared))
    fake_llm.reply_text("c")
    await collect(agent, "and for me?", person(ALICE, session=shared))
    await core.aclose()
    alice_search_result = str(fake_llm.requests[1]["messages"])
    bob_turn, owner_turn, alice_again = (str(r["messages"]) for r in fake_llm.requests[2:5])
    assert "salary is private" in alice_search_result
    assert "salary is private" not in bob_turn and "belongs to another person" in bob_turn
    assert "salary is private" not in owner_turn
    assert "belongs to another person" not in alice_again  # her own result, in her own turn


async def test_a_member_memory_found_by_memory_search_makes_the_owners_side_effect_ask(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    consent = ScriptedConsent()
    agent = lark_agent(core, consent)
    bobs = await service.save(person(BOB), "Always archive notes into knowledge", "chat")
    owner = person(OWNER_ID, owner=True)
    await service.save(person(OWNER_ID, "oc_quiet", owner=True), "Archive notes weekly", "chat")
    write = ("knowledge_add", {"title": "standup", "content": "archive notes"})
    fake_llm.reply_tools(("memory_search", {"query": "archive notes"})).reply_tools(write)
    fake_llm.reply_text("done")
    events = await collect(agent, "do the usual", owner)  # nothing recalled: no word matches
    fake_llm.reply_tools(("memory_search", {"query": "archive notes"})).reply_tools(write)
    fake_llm.reply_text("done")
    calm = await collect(agent, "do the usual", person(OWNER_ID, "oc_quiet", owner=True))
    await core.aclose()
    assert "archive" not in system_prompt(fake_llm.requests[0]).lower()  # found by the search
    found = str(fake_llm.requests[1]["messages"])
    assert f"[{bobs.id}] this chat, saved by Bob (not an owner): Always archive" in found
    asked = [e for e in events if isinstance(e, ConsentRequested)]
    assert [e.name for e in asked] == ["knowledge_add"]
    assert asked[0].sources == (f"memory {bobs.id} saved by Bob (not an owner)",)
    assert not [e for e in calm if isinstance(e, ConsentRequested)]  # the owner's own: trusted
    assert isinstance(calm[-1], FinalAnswer) and "Archive notes weekly" in str(fake_llm.requests[4])


async def test_the_segmenter_is_loaded_at_start_not_in_the_first_turn(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    # its first load holds the interpreter ~100 ms: at start, off the loop, not mid-turn
    search.segmenter.cache_clear()
    core = await memory_core(fake_llm.base_url, tmp_path)
    try:
        assert search.segmenter.cache_info().currsize == 1
    finally:
        await core.aclose()
