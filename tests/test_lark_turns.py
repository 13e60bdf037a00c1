"""Delivery: markdown → card, plain → text, long answers split, UI cards, threads, failures."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from larkbot.events import FinalAnswer, UiPayload
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.render import TEXT_LIMIT, looks_formatted, reply_uuid, split_answer
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.turns import PlainReplyView
from tests.fakes.lark_server import FakeLark

CARD_LIMIT = 28_000  # a card-sized limit, to see the splitting


@pytest.fixture
async def client(fake_lark: FakeLark) -> AsyncIterator[LarkClient]:
    async with httpx.AsyncClient() as http:
        yield LarkClient(http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret)


def msg(message_id: str = "om_u1", thread_id: str = "") -> InboundMessage:
    return InboundMessage(message_id, "oc_1", "group", "ou_a", "q", thread_id=thread_id)


def test_formatting_detection() -> None:
    assert not looks_formatted("Just a plain sentence, with commas: fine.")
    for text in (
        "# Title",
        "- a\n- b",
        "1. one",
        "```py\nx\n```",
        "**bold**",
        "[a](https://x)",
        "| a | b |\n|---|---|",
        "use `ls`",
    ):
        assert looks_formatted(text), text


def test_split_on_paragraphs_and_keep_fences_balanced() -> None:
    paras = [f"paragraph {i} " + "x" * 900 for i in range(60)]
    text = "\n\n".join(paras[:30]) + "\n\n```python\n" + "\n".join(["print(1)"] * 4000) + "\n```"
    parts = split_answer(text, CARD_LIMIT)
    assert len(parts) > 2
    assert all(len(json.dumps(p, ensure_ascii=False).encode()) <= CARD_LIMIT for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts)
    assert parts[0].startswith("paragraph 0") and "paragraph 29" in "".join(parts)
    assert split_answer("short", TEXT_LIMIT) == ["short"]
    huge_line = "界" * 100_000  # one line, multi-byte: cut by characters
    assert all(len(p.encode()) <= TEXT_LIMIT for p in split_answer(huge_line, TEXT_LIMIT))
    assert "".join(split_answer(huge_line, TEXT_LIMIT)) == huge_line


def test_reply_uuid_is_stable_and_short() -> None:
    assert reply_uuid("om_1", "a0") == reply_uuid("om_1", "a0") != reply_uuid("om_1", "a1")
    assert len(reply_uuid("om_" + "x" * 200, "ui3")) <= 50


async def test_plain_and_markdown_and_ui_cards_in_thread(
    client: LarkClient, fake_lark: FakeLark
) -> None:
    view = PlainReplyView(client, msg(thread_id="omt_1"))
    card = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "ui"}]}}
    await view.on_event(UiPayload({"lark_card": card}))
    await view.on_event(UiPayload({"a2ui": {}}))  # another channel's form: not for Lark
    await view.finish(FinalAnswer("## Result\n\n- a\n- b"))
    assert [m["msg_type"] for m in fake_lark.sent] == ["interactive", "interactive"]
    assert fake_lark.sent[0]["body"]["body"]["elements"][0]["content"] == "## Result\n\n- a\n- b"
    assert fake_lark.sent[1]["body"] == card
    assert all(m["reply_to"] == "om_u1" and m["reply_in_thread"] for m in fake_lark.sent)
    assert len(view.sent) == 2


async def test_long_plain_answer_split_and_retry_is_idempotent(
    client: LarkClient, fake_lark: FakeLark
) -> None:
    text = "\n\n".join("word " * 4000 for _ in range(12))  # ~240 KB of plain text
    await PlainReplyView(client, msg("om_long")).finish(FinalAnswer(text))
    first = len(fake_lark.sent)
    assert first >= 2 and all(m["msg_type"] == "text" for m in fake_lark.sent)
    assert not any(m["reply_in_thread"] for m in fake_lark.sent)
    await PlainReplyView(client, msg("om_long")).finish(FinalAnswer(text))  # a re-run turn
    assert len(fake_lark.sent) == first and fake_lark.dedup_hits == first


async def test_fail_tells_the_user(client: LarkClient, fake_lark: FakeLark) -> None:
    await PlainReplyView(client, msg()).fail("the language model failed")
    assert fake_lark.texts() == ["Sorry, I could not answer that: the language model failed"]
