"""A refused card never loses an answer (issue #40).

FakeLark refuses cards on rules stricter than the ones the budget knows (card-wide tables,
elements, size, every card), as Lark does when its undocumented limits bite. A six-table and a
40-table answer go out through a streaming turn, a non-streaming turn (plain and final-card
views) and a scheduled job's message; each must arrive whole: every table's cells exactly once,
in order, on what the chat finally shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest

from cards import lark_cards, parse_card, validate_lark_card
from cards.lark_fallback import card_text, plain_card, plain_cards
from cards.lark_limits import count_card_tables
from larkbot.config import LarkConfig
from larkbot.events import FinalAnswer, TextDelta, ToolFinished, ToolStarted
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.transport import RetryPolicy
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.final_card import FinalCardView
from larkbot.lark.delivery.job_delivery import LarkNotifier
from larkbot.lark.delivery.streaming import StreamingCardView
from larkbot.lark.delivery.turns import PlainReplyView
from tests.fakes.lark_cardkit import CardRules, md_tables
from tests.fakes.lark_server import FakeLark, route_key
from tests.table_answers import ANSWERS, CELL, assert_whole, shown, tables

REPLY = "POST /open-apis/im/v1/messages/{id}/reply"
MSG = InboundMessage("om_user_1", "oc_chat", "p2p", "ou_owner", "tables please")
RULES = {
    "like_lark": CardRules(),  # more than 5 tables in a card: 230099 / ErrCode 11310
    "two_tables": CardRules(max_tables=2),  # stricter than the budget's 3
    "small_cards": CardRules(max_bytes=2500),  # the answer's cards are over it
    "no_cards": CardRules(refuse_all=True),  # Lark takes no card at all: text it is
}


@pytest.fixture
async def client(fake_lark: FakeLark) -> AsyncIterator[LarkClient]:
    """A LarkClient on FakeLark with quick retries."""
    async with httpx.AsyncClient() as http:
        retry = RetryPolicy(attempts=2, backoff_base=0.01)
        yield LarkClient(
            http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret, retry=retry
        )


def posted(fake: FakeLark, suffix: str) -> bool:
    """Some request to a path ending in `suffix` was made (whatever Lark answered)."""
    return any(r.path.endswith(suffix) for r in fake.requests)


async def deliver(path: str, fake: FakeLark, client: LarkClient, answer: str) -> None:
    """Deliver `answer` the way `path` does."""
    if path == "plain":
        await PlainReplyView(client, MSG).finish(FinalAnswer(answer))
    elif path == "final_card":
        view = FinalCardView(client, MSG)
        await view.on_event(ToolStarted("c1", "web_search", {"query": "rain"}))
        await view.on_event(ToolFinished("c1", "web_search", "ok", False, 0.2))
        await view.finish(FinalAnswer(answer))
    elif path == "streaming":
        lark = LarkConfig(stream_updates_per_second=10)
        stream = StreamingCardView(client, MSG, lark, delay=0)
        await fake.wait_for(lambda: posted(fake, "/reply"))  # the live card goes out (or not)
        await stream.on_event(TextDelta(answer))
        if not fake.card_rules.refuse_all:  # the answer is streamed into it (or refused)
            await fake.wait_for(lambda: posted(fake, "/content"))
        await stream.finish(FinalAnswer(answer))
    else:
        await LarkNotifier(client).notify("oc_chat", answer, "sch-job-1")


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("path", ["plain", "final_card", "streaming", "scheduled"])
async def test_answer_arrives_whole_whatever_lark_refuses(
    fake_lark: FakeLark, client: LarkClient, path: str, answer: str, rules: str
) -> None:
    fake_lark.card_rules = replace(RULES[rules])
    await deliver(path, fake_lark, client, ANSWERS[answer])
    assert_whole(fake_lark, ANSWERS[answer])
    posts = [r for r in fake_lark.requests if r.path.endswith(("/reply", "/messages"))]
    if rules in ("two_tables", "no_cards"):  # Lark did refuse something on the way
        assert len(posts) > len(fake_lark.sent)
    if rules == "no_cards":
        assert fake_lark.texts(), "no card was taken: the answer went out as text"


async def test_a_card_refused_for_its_elements_arrives_in_a_plain_card(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    fake_lark.card_rules = CardRules(max_elements=10)
    events = [{"time": f"{9 + i // 4}:{i % 4 * 15:02d}", "title": f"E{i}X"} for i in range(24)]
    (card,) = lark_cards(parse_card({"kind": "timeline", "title": "Day", "events": events}))
    await PlainReplyView(client, MSG).finish(FinalAnswer("Your day:", ui=[{"lark_card": card}]))
    assert re.findall(r"E\d+X", shown(fake_lark)) == [f"E{i}X" for i in range(24)]
    assert [m["msg_type"] for m in fake_lark.sent] == ["text", "interactive"]  # answer, card
    assert fake_lark.sent[1]["body"]["body"]["elements"][0]["content"].startswith("Day\n\n")


async def test_a_retried_delivery_posts_nothing_twice(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    fake_lark.card_rules = CardRules(max_tables=2, max_bytes=2500)  # plain cards, then text
    await PlainReplyView(client, MSG).finish(FinalAnswer(ANSWERS["forty"]))
    first = list(fake_lark.sent)
    await PlainReplyView(client, MSG).finish(FinalAnswer(ANSWERS["forty"]))  # a re-run turn
    assert fake_lark.sent == first and fake_lark.dedup_hits == len(first)
    assert_whole(fake_lark, ANSWERS["forty"])


async def test_our_own_validator_refusing_degrades_too(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    card = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": tables(6)}]}}
    await client.reply("om_user_1", "interactive", card, uuid="u-1")  # 6 tables: InvalidCard
    (request,) = [r for r in fake_lark.requests if r.route == route_key(REPLY)]  # never sent
    assert md_tables(json.loads(request.json["content"])["body"]["elements"][0]["content"]) == 0
    assert_whole(fake_lark, tables(6))


async def test_other_refusals_are_not_degraded(fake_lark: FakeLark, client: LarkClient) -> None:
    fake_lark.fail_next(REPLY, status=400, code=230002, msg="Bot is not in the chat")
    with pytest.raises(LarkAPIError) as err:
        await client.reply("om_user_1", "interactive", plain_card("| a |\n|---|\n| 1 |"))
    assert err.value.code == 230002 and fake_lark.sent == []
    assert len([r for r in fake_lark.requests if r.route == route_key(REPLY)]) == 1


def test_plain_cards_hold_the_text_in_order_without_tables() -> None:
    text = tables(40) + "\n\n" + "\n\n".join(f"paragraph {i}" for i in range(3000))
    cards = plain_cards(text)
    assert len(cards) > 1
    assert all(validate_lark_card(c) == [] and count_card_tables(c) == 0 for c in cards)
    joined = "\n\n".join(card_text(c) for c in cards)
    assert CELL.findall(joined) == CELL.findall(text)
    assert re.findall(r"paragraph \d+", joined) == [f"paragraph {i}" for i in range(3000)]


def test_card_text_reads_header_markdown_plain_text_and_table_components() -> None:
    table = {"tag": "table", "columns": [{"name": "c", "display_name": "City"}]}
    card = {
        "schema": "2.0",
        "config": {"summary": {"content": "Title"}},
        "header": {"title": {"tag": "plain_text", "content": "Title"}},
        "body": {
            "elements": [
                {"tag": "markdown", "content": "**md**"},
                {**table, "rows": [{"c": "Paris"}, {"c": "Rome"}]},
                {"tag": "div", "text": {"tag": "plain_text", "content": "plain"}},
            ]
        },
    }
    assert card_text(card) == "Title\n\n**md**\n\nCity\nParis\nRome\n\nplain"
