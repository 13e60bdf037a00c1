"""The consolidation pass with a scripted model: duplicates merged, a contradiction resolved,
every version kept (undo), the person's card sent through Lark; the nightly pass runs on the
leader only, once a day."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx

from larkbot.config import parse_settings
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.transport import RetryPolicy
from larkbot.lark.delivery.direct import direct_notifier
from larkbot.memory.commands import memory_command
from larkbot.memory.nightly import Nightly, seconds_until
from larkbot.memory.wiring import consolidator, has_model
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.memory_rig import ALICE, BOB, memory_core, person

FAST = RetryPolicy(attempts=2, backoff_base=0.01, backoff_max=0.05, ratelimit_wait_max=0.05)


async def test_a_pass_merges_resolves_keeps_versions_and_sends_the_card(
    fake_llm: FakeLLM, fake_lark: FakeLark, tmp_path: Path
) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    alice = person(ALICE)
    tea = await service.save(alice, "Alice likes green tea")
    tea2 = await service.save(alice, "Alice drinks green tea every morning")
    old_home = await service.save(alice, "Alice lives in Shanghai")
    await service.save(alice, "Alice moved to Beijing")
    await service.save(person(BOB), "Bob likes coffee")  # alone: nothing to consolidate
    plan = {
        "merge": [{"ids": [tea.id, tea2.id], "content": "Alice drinks green tea every morning"}],
        "drop": [{"id": old_home.id, "because": "moved"}, {"id": "m-not-hers"}],
    }
    fake_llm.reply_text(f"```json\n{json.dumps(plan)}\n```")
    async with httpx.AsyncClient() as http:
        lark = LarkClient(
            http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret, retry=FAST
        )
        reports = await consolidator(service, core.provider, direct_notifier(lark)).run()
    left = [m.content for m in await service.visible(alice)]
    versions = await service.store.of_subject("me", ALICE, all_states=True)
    merged_id = next(
        m.id
        for m in versions
        if m.state == "active" and "every morning" in m.content and m.id != tea2.id
    )
    undone = await memory_command(service, "/memory", f"undo {merged_id}", alice)
    back_home = await memory_command(service, "/memory", f"undo {old_home.id}", alice)
    after_undo = sorted(m.content for m in await service.visible(alice))
    forgot = await memory_command(service, "/forget", "all", alice)
    remaining = await service.store.of_subject("me", ALICE, all_states=True)
    await core.aclose()
    assert len(fake_llm.requests) == 1  # only Alice had something to tidy
    assert sorted(left) == ["Alice drinks green tea every morning", "Alice moved to Beijing"]
    assert len(versions) == 5  # the merged one and the four originals, retired not deleted
    assert [r.person for r in reports] == [ALICE]
    card = fake_lark.sent[0]
    assert card["receive_id"] == ALICE and card["receive_id_type"] == "open_id"
    assert card["msg_type"] == "interactive"
    assert "Alice likes green tea" in card["content"] and "Shanghai" in card["content"]
    assert (
        undone == "Restored 2 earlier version(s)." and back_home == "Restored 1 earlier version(s)."
    )
    assert after_undo == [
        "Alice drinks green tea every morning",
        "Alice likes green tea",
        "Alice lives in Shanghai",
        "Alice moved to Beijing",
    ]
    assert forgot == "Forgot 4 memories about you." and remaining == []  # versions too


async def test_nightly_runs_on_the_leader_once_a_day(fake_llm: FakeLLM, tmp_path: Path) -> None:
    core = await memory_core(fake_llm.base_url, tmp_path)
    service = core.runtime.services["memory"]
    await service.save(person(ALICE), "Alice likes tea")
    await service.save(person(ALICE), "Alice likes tea a lot")
    fake_llm.reply_text('{"merge": [], "drop": []}')
    tz = ZoneInfo("UTC")
    follower = Nightly(consolidator(service, core.provider, None), "03:30", tz, lambda: False, "b")
    leader = Nightly(consolidator(service, core.provider, None), "03:30", tz, lambda: True, "a")
    ran = [await follower.tick(), await leader.tick(), await leader.tick()]
    await core.aclose()
    assert ran == [False, True, False]
    assert len(fake_llm.requests) == 1


def test_the_pass_is_off_without_a_model_and_waits_for_its_hour() -> None:
    default = {"base_url": "https://api.openai.com/v1", "api_key": ""}
    assert not has_model(parse_settings({"llm": default}))  # no key, default endpoint: no LLM
    assert has_model(parse_settings({"llm": {"base_url": "http://127.0.0.1:11434/v1"}}))
    tz = ZoneInfo("Asia/Shanghai")
    evening = datetime(2026, 3, 1, 22, 0, tzinfo=tz)
    assert seconds_until("03:30", tz, evening) == 5.5 * 3600
    assert seconds_until("21:00", tz, evening) == 23 * 3600
