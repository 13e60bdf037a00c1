"""Two replicas on one PostgreSQL share memory: saved on one, recalled on the other for its
person only; forgotten on the other, gone on the first; one consolidation pass a day."""

from __future__ import annotations

from pathlib import Path

from tests.core_helpers import collect
from tests.fakes.llm import FakeLLM
from tests.memory_rig import ALICE, BOB, OTHER_GROUP, lark_agent, memory_core, person, system_prompt


async def test_replicas_share_memory_on_postgres(
    pg_url: str, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    one = await memory_core(fake_llm.base_url, tmp_path / "a", pg_url)
    two = await memory_core(fake_llm.base_url, tmp_path / "b", pg_url)
    try:
        fake_llm.reply_tools(("memory_save", {"content": "Alice reviews every Go change"}))
        fake_llm.reply_text("noted")
        await collect(lark_agent(one), "remember I review all Go changes", person(ALICE))
        fake_llm.reply_text("a").reply_text("b")
        await collect(
            lark_agent(two), "who should review this Go change?", person(ALICE, OTHER_GROUP)
        )
        await collect(
            lark_agent(two), "who should review this Go change?", person(BOB, OTHER_GROUP)
        )
        alice_there, bob_there = fake_llm.requests[2], fake_llm.requests[3]
        assert "Alice reviews every Go change" in system_prompt(alice_there)
        assert "Alice reviews" not in str(bob_there["messages"])
        mine = await two.runtime.services["memory"].search(person(ALICE), "Go")
        await two.runtime.services["memory"].forget(person(ALICE), mine[0].id)
        assert await one.runtime.services["memory"].visible(person(ALICE)) == []
        claims = [
            await core.runtime.services["memory"].store.claim_pass("2026-01-01", name)
            for core, name in ((one, "a"), (two, "b"))
        ]
        assert claims == [True, False]
    finally:
        await one.aclose()
        await two.aclose()
