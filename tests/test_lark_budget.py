"""The Lark API budget: the ledger (per endpoint and month, shared), the plan, the 80 % notice,
the shared token / bot-info cache, and what a streamed and a plain answer cost (FakeLark)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from larkbot.config import LarkConfig
from larkbot.events import FinalAnswer, TextDelta, ToolFinished, ToolStarted
from larkbot.lark.api.budget import QUOTA_TZ, CallLedger, api_calls, month_of
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.shared_cache import SharedCache
from larkbot.lark.api.spending import STREAM_INTERVAL, Plan, plan_for
from larkbot.lark.api.transport import TOKEN_PATH, RetryPolicy
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.final_card import FinalCardView
from larkbot.lark.delivery.streaming import StreamingCardView, make_view_factory
from larkbot.lark.delivery.turns import PlainReplyView
from larkbot.storage.db import Database
from tests.fakes.lark_server import FakeLark

MSG = InboundMessage("om_user_1", "oc_chat", "p2p", "ou_owner", "hi")
MID_MONTH = datetime(2026, 12, 16, 12, tzinfo=QUOTA_TZ).timestamp()
FIRST_DAY = datetime(2026, 12, 1, 0, 30, tzinfo=QUOTA_TZ).timestamp()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A SQLite database two 'replicas' share."""
    database = Database(f"sqlite:///{tmp_path}/shared.db")
    yield database
    await database.close()


def client_for(http: httpx.AsyncClient, fake: FakeLark) -> LarkClient:
    """A LarkClient on FakeLark with quick retries."""
    retry = RetryPolicy(attempts=2, backoff_base=0.01)
    return LarkClient(http, fake.domain, fake.app_id, fake.app_secret, retry=retry)


def test_plan_adapts_to_what_is_left_of_the_month() -> None:
    assert plan_for(9_600, 10_000, MID_MONTH) == Plan("plain")  # nearly exhausted
    assert plan_for(8_500, 10_000, MID_MONTH) == Plan("card")  # tight: final-answer card
    plenty = plan_for(10, 10_000, FIRST_DAY)
    assert plenty.mode == "stream" and plenty.interval == pytest.approx(STREAM_INTERVAL, 0.01)
    ahead = plan_for(7_000, 10_000, MID_MONTH)  # 30 % left, half the month to go
    assert ahead.mode == "stream" and ahead.interval > STREAM_INTERVAL * 1.5
    assert plan_for(7_900, 10_000, datetime(2026, 12, 2, tzinfo=QUOTA_TZ).timestamp()).mode == (
        "card"  # far ahead of pace early in the month: a live card is not worth it
    )
    assert plan_for(10**9, 0) == Plan("stream")  # 0 = unlimited: the configured rate


def test_views_follow_the_plan() -> None:
    lark = LarkConfig()
    for mode, kind in (("plain", PlainReplyView), ("card", FinalCardView)):
        factory = make_view_factory(object(), lark, lambda m=mode: Plan(m))  # type: ignore[arg-type, misc]
        view = factory(MSG, None)  # type: ignore[arg-type]
        assert type(view) is kind


async def test_calls_are_counted_per_endpoint_and_month_across_replicas(db: Database) -> None:
    one, two = CallLedger(db, lambda: 100), CallLedger(db, lambda: 100)
    await one.init()
    await two.init()
    for _ in range(3):
        one.record("/open-apis/im/v1/messages/om_abc123/reply")
    two.record("/open-apis/im/v1/messages/om_def456/reply")
    two.record("/open-apis/cardkit/v1/cards")
    assert one.used() == 3, "counted at once, before any write"
    await one.flush()
    await two.flush()
    assert two.used() == 5 and one.used() == 3, "each knows the others' calls as of its last read"
    await one.flush()  # nothing of its own to write: re-reads the shared total
    assert one.used() == 5
    reply = "/open-apis/im/v1/messages/:id/reply"
    assert await one.by_endpoint() == {reply: 4, "/open-apis/cardkit/v1/cards": 1}
    async with db.engine.connect() as conn:
        months = (await conn.execute(sa.select(api_calls.c.month).distinct())).scalars().all()
    assert months == [month_of()]
    await one.close()
    await two.close()
    restarted = CallLedger(db, lambda: 100)
    await restarted.init()
    assert restarted.used() == 5  # persisted
    await restarted.close()


async def test_the_80_percent_notice_is_sent_once_whatever_the_replicas(db: Database) -> None:
    notices: list[tuple[str, int, int]] = []

    async def notice(month: str, used: int, budget: int) -> None:
        notices.append((month, used, budget))

    replicas = [CallLedger(db, lambda: 10, notice) for _ in range(2)]
    for ledger in replicas:
        await ledger.init()
    for i in range(7):
        replicas[i % 2].record("/open-apis/im/v1/messages")
    for ledger in replicas:
        await ledger.flush()
    assert notices == [], "70 % is no reason to write"
    replicas[0].record("/open-apis/im/v1/messages")
    replicas[1].record("/open-apis/im/v1/messages")
    await asyncio.gather(*(ledger.flush() for ledger in replicas))
    for _ in range(3):
        for ledger in replicas:
            ledger.record("/open-apis/im/v1/messages")
            await ledger.flush()
    later = CallLedger(db, lambda: 10, notice)  # a restart later in the month
    await later.init()
    await later.flush()
    assert notices == [(month_of(), notices[0][1], 10)] and notices[0][1] >= 8
    for ledger in [*replicas, later]:
        await ledger.close()


async def test_token_and_bot_info_are_shared_by_replicas_and_restarts(
    db: Database, fake_lark: FakeLark
) -> None:
    cache = SharedCache(db)
    await cache.init()
    async with httpx.AsyncClient() as http:
        first, second = client_for(http, fake_lark), client_for(http, fake_lark)
        first.share(cache)
        second.share(cache)
        assert (await first.bot_info())["open_id"] == "ou_bot"
        assert (await second.bot_info())["open_id"] == "ou_bot"
        await second.send("oc_chat", "text", {"text": "hi"})
        assert fake_lark.token_fetches == 1
        assert [r.path for r in fake_lark.requests].count("/open-apis/bot/v3/info") == 1
        fake_lark.revoke_tokens()  # a token Lark refuses is never taken from the cache again
        third = client_for(http, fake_lark)
        third.share(cache)
        await third.send("oc_chat", "text", {"text": "after revoke"})
        await second.send("oc_chat", "text", {"text": "second again"})
    assert fake_lark.texts() == ["hi", "after revoke", "second again"]
    assert fake_lark.token_fetches <= 3


def api_calls_made(fake: FakeLark) -> list[str]:
    """Every call but the token fetch (cached across restarts and replicas)."""
    return [r.route for r in fake.requests if r.path != TOKEN_PATH]


async def ten_second_answer(view: StreamingCardView | PlainReplyView, scale: float) -> None:
    """A ~10 s turn (scaled): a tool step, then the answer streamed in 30 pieces.

    Each event is due at its second of the turn on the loop's clock: on a loaded machine a late
    wakeup does not push every later event back (30 small delays made the turn outlast the
    view's next update), and a stall wakes the earlier deadline first, as in real time.
    """
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def at(second: float) -> None:
        await asyncio.sleep(max(0.0, start + second * scale - loop.time()))

    await at(0.5)
    await view.on_event(ToolStarted("c1", "web_search", {"query": "phones"}))
    await at(2.0)
    await view.on_event(ToolFinished("c1", "web_search", "results", False, 1.5))
    for i in range(30):
        await at(2.0 + 0.25 * (i + 1))
        await view.on_event(TextDelta(f"word{i} "))
    await view.finish(FinalAnswer(" ".join(f"word{i}" for i in range(30))))


async def test_a_streamed_answer_costs_4_calls_and_a_plain_one_1(fake_lark: FakeLark) -> None:
    scale = 0.2  # 10 s of turn in 2 s: delay and interval scaled by the same factor
    async with httpx.AsyncClient() as http:
        client = client_for(http, fake_lark)
        await client.token()
        lark = LarkConfig(stream_updates_per_second=10)
        plan = plan_for(0, LarkConfig().monthly_call_budget, FIRST_DAY)  # the default budget
        view = StreamingCardView(
            client, MSG, lark, delay=1.0 * scale, interval=plan.interval * scale
        )
        await ten_second_answer(view, scale)
        streamed = api_calls_made(fake_lark)
        (card,) = fake_lark.cardkit.cards.values()
        assert card.streaming_mode is False and card.elements["stream"].endswith("word29")
        fake_lark.requests.clear()
        plain = PlainReplyView(client, InboundMessage("om_user_2", "oc_chat", "p2p", "ou_a", "q"))
        await plain.finish(FinalAnswer("a short answer"))
    assert len(streamed) <= 4, streamed
    assert api_calls_made(fake_lark) == ["POST /open-apis/im/v1/messages/{}/reply"]


async def test_doctor_says_what_the_budget_allows(tmp_path: Path) -> None:
    from larkbot.config import parse_settings
    from larkbot.lark.api.doctor_check import check_lark_budget

    url = f"sqlite:///{tmp_path}/doctor.db"
    settings = parse_settings({"storage": {"url": url}, "lark": {"monthly_call_budget": 100}})
    ledger = CallLedger(Database(url), lambda: 100)
    await ledger.init()
    for calls, ok, words in (
        (10, True, "10 of 100"),
        (85, True, "one final card"),
        (97, False, "plain"),
    ):
        while ledger.used() < calls:
            ledger.record("/open-apis/im/v1/messages")
        await ledger.flush()
        result = await check_lark_budget(settings, None)  # type: ignore[arg-type]
        assert result.ok is ok and words in result.detail, result
    await ledger.close()
    await ledger.db.close()
