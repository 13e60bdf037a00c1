"""The budget through `serve` (App + FakeLark + FakeLLM): answers adapt to the month's use,
replicas share the ledger and the cached token, owners hear once at 80 %, /status, /metrics
and doctor show the month's use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
import sqlalchemy as sa

from larkbot.app import App
from larkbot.lark.api.budget import api_calls, month_of
from larkbot.lark.api.doctor_check import check_lark_budget
from larkbot.storage.db import Database
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.lark_harness import OWNER, Served, message_event, settings_for

ANSWER = "The cheapest phone is the Redmi K70."
BOT_INFO = "/open-apis/bot/v3/info"


def settings(home: Path, lark: FakeLark, llm: FakeLLM, **lark_over: Any) -> Any:
    """Streaming on, the default budget unless overridden."""
    return settings_for(home, lark.domain, llm.base_url, lark={"streaming": True, **lark_over})


async def seed(home: Path, calls: int) -> None:
    """This month's calls so far (as other replicas would have written them)."""
    db = Database(f"sqlite:///{home}/larkbot.db")
    try:
        await db.create(api_calls)
        async with db.engine.begin() as conn:
            row = {"month": month_of(), "endpoint": "/open-apis/im/v1/messages", "calls": calls}
            await conn.execute(sa.insert(api_calls), [row])
    finally:
        await db.close()


def slow_turn(llm: FakeLLM) -> None:
    """A turn over 1 s: one tool step, then a plain-text answer."""
    call = FakeToolCall("ui_card", {"card": {"kind": "rank", "title": "Phones", "items": []}})
    llm.add(Reply(tool_calls=[call], delay=1.3), Reply(text=ANSWER, text_chunk=5, delay=0.1))


@pytest.mark.parametrize(("used", "expect"), [(9_700, "plain"), (8_500, "card"), (100, "stream")])
async def test_answers_adapt_to_what_is_left_of_the_budget(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, used: int, expect: str
) -> None:
    await seed(home, used)
    slow_turn(fake_llm)
    async with Served(settings(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("compare phones", message_id="om_adapt_1"))
        assert await s.app.idle(15)
    if expect != "stream":
        await fake_lark.wait_for(lambda: any(ANSWER in m["content"] for m in fake_lark.sent), 30)
    answer = next((m for m in fake_lark.sent if ANSWER in m["content"]), {})
    if expect == "plain":  # nearly exhausted: no card JSON for the answer, one call
        assert fake_lark.cardkit.cards == {} and answer["msg_type"] == "text"
    elif expect == "card":  # tight: no live card, steps and answer in one final card
        assert fake_lark.cardkit.cards == {} and answer["msg_type"] == "interactive", answer
        assert "ui_card" in answer["content"], answer
    else:  # plenty: the live CardKit card
        (card,) = fake_lark.cardkit.cards.values()
        assert card.streaming_mode is False and ANSWER in card.elements["stream"]


async def test_two_replicas_share_the_ledger_the_token_and_the_bot_info(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    config = settings(home, fake_lark, fake_llm)
    first, second = App(config), App(config)
    await first.start()
    await second.start()
    try:
        assert first.parts.bot_open_id == second.parts.bot_open_id == "ou_bot"
        assert fake_lark.token_fetches == 1, "the second replica reused the shared token"
        assert [r.path for r in fake_lark.requests].count(BOT_INFO) == 1
        for app in (first, second):
            assert app.client is not None
            await app.client.send("oc_chat", "text", {"text": "hi"})
        ledger1, ledger2 = first.parts.ledger, second.parts.ledger
        assert ledger1 is not None and ledger2 is not None
        await ledger2.flush()
        counts = await ledger1.by_endpoint()  # writes the first replica's calls, reads all
        assert counts["/open-apis/im/v1/messages"] == 2  # one each, both in the shared rows
        await ledger2.flush()  # re-reads: the first replica's calls are in its total too
        assert ledger1.used() == ledger2.used() == sum(counts.values())
    finally:
        await first.stop()
        await second.stop()
    again = App(config)  # a restart: nothing fetched again
    await again.start()
    try:
        assert fake_lark.token_fetches == 1
        assert [r.path for r in fake_lark.requests].count(BOT_INFO) == 1
        assert again.parts.ledger is not None and again.parts.ledger.used() >= 4
    finally:
        await again.stop()


async def test_owners_hear_once_at_80_percent_and_status_metrics_doctor_show_it(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    await seed(home, 798)  # + token and bot info at start: 80 % of 1,000
    config = settings(home, fake_lark, fake_llm, monthly_call_budget=1_000)
    fake_llm.reply_text("one").reply_text("two")

    def notices() -> list[dict[str, Any]]:
        return [m for m in fake_lark.sent if m["receive_id_type"] == "open_id"]

    async with Served(config) as s:
        for i in range(2):
            await s.post_event(message_event(f"question {i}", message_id=f"om_q_{i}"))
            await fake_lark.wait_for(lambda n=i + 1: len(fake_lark.texts()) >= n, 30)  # type: ignore[misc]
        await fake_lark.wait_for(lambda: len(notices()) == 1, 30)
        await s.post_event(message_event("/status", message_id="om_status"))
        await fake_lark.wait_for(lambda: "calls this month" in str(fake_lark.texts()), 30)
        assert s.http is not None
        async with s.http.get(s.url("/metrics")) as resp:
            exposition = await resp.text()
        assert s.app.parts.ledger is not None
        await s.app.parts.ledger.flush()
    (notice,) = notices()
    assert notice["receive_id"] == OWNER and "lark.monthly_call_budget" in notice["body"]["text"]
    status = next(t for t in fake_lark.texts() if "calls this month" in t)
    assert "of 1,000 Lark API calls this month" in status
    assert "larkbot_lark_api_calls_month" in exposition
    assert "larkbot_lark_api_budget 1000.0" in exposition
    doctor = await check_lark_budget(config, None)  # type: ignore[arg-type]
    assert doctor.ok and "of 1,000 Lark API calls this month" in doctor.detail
    assert "im/v1/messages" in doctor.detail


async def test_metrics_show_the_configured_budget_before_lark_is_connected(home: Path) -> None:
    from larkbot.config import parse_settings
    from larkbot.server import open_site

    raw = {"lark": {"mode": "websocket", "monthly_call_budget": 2_500}}
    app = App(parse_settings(raw | {"llm": {"base_url": "http://127.0.0.1:9/v1"}}))
    await app.start()
    try:
        assert app.parts.ledger is None  # no Lark credentials: nothing counts calls yet
        runner, site = await open_site(app, "127.0.0.1", 0)
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{site.port}/metrics") as resp,
            ):
                exposition = await resp.text()
        finally:
            await runner.cleanup()
    finally:
        await app.stop()
    assert "larkbot_lark_api_budget 2500.0" in exposition  # not 0, which reads as unlimited
