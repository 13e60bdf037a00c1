"""StreamingCardView against FakeLark, driven event by event; and the pure progress renderer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cards import validate_lark_card
from cards.lark_progress import ELEMENT_ID
from larkbot.config import LarkConfig
from larkbot.events import (
    ConsentRequested,
    FinalAnswer,
    TextDelta,
    ToolFinished,
    ToolStarted,
    UiPayload,
)
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.transport import RetryPolicy
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.progress import Progress, short_argument
from larkbot.lark.delivery.streaming import StreamingCardView, make_view_factory
from larkbot.lark.delivery.turns import PlainReplyView
from tests.fakes.lark_server import FakeLark

MSG = InboundMessage("om_user_1", "oc_chat", "p2p", "ou_owner", "hi")


@pytest.fixture
async def client(fake_lark: FakeLark) -> AsyncIterator[LarkClient]:
    """A LarkClient on FakeLark with quick retries."""
    async with httpx.AsyncClient() as http:
        retry = RetryPolicy(attempts=2, backoff_base=0.01)
        yield LarkClient(
            http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret, retry=retry
        )


def lark(**over: Any) -> LarkConfig:
    """The lark section with overrides."""
    return LarkConfig(**over)


async def opened(fake: FakeLark, client: LarkClient, **over: Any) -> StreamingCardView:
    """A view whose card is already open (no 1 s wait)."""
    view = StreamingCardView(client, MSG, lark(**over), delay=0)
    await fake.wait_for(lambda: len(fake.sent) == 1)
    return view


async def test_steps_then_answer_then_final_state(fake_lark: FakeLark, client: LarkClient) -> None:
    view = await opened(fake_lark, client, stream_updates_per_second=10)
    await view.on_event(ToolStarted("c1", "web_search", {"query": "lark cards"}))
    await fake_lark.wait_for(
        lambda: any(
            "⚙" in t
            for c in fake_lark.cardkit.cards.values()
            for t in c.element_history.get(ELEMENT_ID, [])
        )
    )
    await view.on_event(ToolFinished("c1", "web_search", "results", True, 0.42))
    await view.on_event(TextDelta("Found it."))
    await view.finish(FinalAnswer("Found it."))
    (card,) = fake_lark.cardkit.cards.values()
    assert card.elements[ELEMENT_ID] == "- ✗ **web_search** · lark cards · 0.4 s\n\nFound it."
    assert card.streaming_mode is False
    assert card.ops[-1][0] == "update"  # new text and streaming off in one call
    assert card.card["config"]["summary"] == {"content": "Found it."}


async def test_long_answer_fills_the_card_and_continues_in_valid_cards(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    view = await opened(fake_lark, client)
    answer = "\n\n".join(f"Paragraph {i}: " + "内容 " * 400 for i in range(40))
    ui = {"lark_cards": [{"schema": "2.0", "body": {"elements": []}}] * 2}
    await view.on_event(UiPayload(ui))
    await view.finish(FinalAnswer(answer))
    (card,) = fake_lark.cardkit.cards.values()
    more = [m["body"] for m in fake_lark.sent[1:-2]]
    assert more and all(validate_lark_card(c) == [] for c in more)
    whole = card.elements[ELEMENT_ID] + "".join(c["body"]["elements"][0]["content"] for c in more)
    assert "Paragraph 0:" in whole and "Paragraph 39:" in whole
    assert [m["body"] for m in fake_lark.sent[-2:]] == ui["lark_cards"]  # ui cards last


async def test_fail_shows_on_the_open_card(fake_lark: FakeLark, client: LarkClient) -> None:
    view = await opened(fake_lark, client)
    await view.fail("it took too long.")
    (card,) = fake_lark.cardkit.cards.values()
    assert card.elements[ELEMENT_ID] == "Sorry, I could not answer that: it took too long."
    assert card.streaming_mode is False and len(fake_lark.sent) == 1


async def test_updates_are_throttled(fake_lark: FakeLark, client: LarkClient) -> None:
    view = await opened(fake_lark, client, stream_updates_per_second=2)
    for i in range(50):
        await view.on_event(TextDelta(f"w{i} "))
    await fake_lark.wait_for(lambda: any(c.ops for c in fake_lark.cardkit.cards.values()))
    for i in range(50):  # a second burst while the updater waits out its 0.5 s
        await view.on_event(TextDelta(f"x{i} "))
    await view.finish(FinalAnswer("done"))
    (card,) = fake_lark.cardkit.cards.values()
    assert [op for op, _ in card.ops].count("content") <= 3
    assert card.elements[ELEMENT_ID] == "done"


async def test_reply_failure_means_plain_answer(fake_lark: FakeLark, client: LarkClient) -> None:
    fake_lark.fail_next(
        "POST /open-apis/im/v1/messages/{id}/reply", status=400, code=230099, times=2
    )
    view = StreamingCardView(client, MSG, lark(), delay=0)
    await fake_lark.wait_for(lambda: len(fake_lark.requests) >= 4)
    await view.finish(FinalAnswer("plain answer"))
    assert fake_lark.texts() == ["plain answer"]


def test_streaming_off_gives_plain_views(tmp_path: Path) -> None:
    factory = make_view_factory(object(), lark(streaming=False))  # type: ignore[arg-type]
    assert isinstance(factory(MSG, None), PlainReplyView)  # type: ignore[arg-type]


def test_progress_rendering() -> None:
    assert short_argument({"card": {"kind": "rank", "title": "Top `10`"}}) == "Top 10"
    assert short_argument({"command": "rm -rf /tmp/x\nls"}) == "rm -rf /tmp/x ls"
    assert len(short_argument({"q": "x" * 100})) == 48
    progress = Progress()
    for i in range(14):
        progress.apply(ToolStarted(f"c{i}", "shell", {"command": f"echo {i}"}), now=0)
    progress.apply(ToolFinished("c13", "shell", "ok", False, 1.25), now=1)
    lines = progress.steps_markdown().splitlines()
    assert lines[0] == "- … 2 earlier steps" and len(lines) == 13
    assert lines[-1] == "- ✓ **shell** · echo 13 · 1.2 s"
    assert lines[-2] == "- ⚙ **shell** · echo 12 · …"
    waiting = Progress()
    waiting.apply(ConsentRequested("c9", "shell", "rm -rf /x", "shell", True))
    assert waiting.render() == "- 🔐 **shell** · waiting for the owner's approval\n\n⏳ Working…"
    waiting.apply(ToolStarted("c9", "shell", {"command": "rm -rf /x"}))
    assert "🔐" not in waiting.render()
    assert Progress().render() == "⏳ Working…"
    assert Progress().render("", final=True) == "✓ Done"
    table = "| a |\n|---|\n| 1 |"
    assert Progress().render("\n\n".join([table] * 5)).count("```text") == 2  # three stay
