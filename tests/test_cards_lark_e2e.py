"""Cards in Lark end to end: signed events → App → FakeLLM → FakeLark (ui cards, streaming)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from cards import validate_lark_card
from cards.lark_progress import ELEMENT_ID
from tests.cards_samples import SAMPLES
from tests.fakes.lark_server import FakeLark, route_key
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.lark_harness import Served, message_event, settings_for

CREATE = "POST /open-apis/cardkit/v1/cards"
CONTENT = "PUT /open-apis/cardkit/v1/cards/{card_id}/elements/{element_id}/content"
SETTINGS = "PATCH /open-apis/cardkit/v1/cards/{card_id}/settings"
ANSWER = "Phones compared: **Redmi K70** is the cheapest.\n\nAsk me for more details."

# these tests are about the live card itself: no monthly budget slows its updates down
UNBUDGETED = {"streaming": True, "stream_updates_per_second": 10, "monthly_call_budget": 0}


def streaming(home: Path, lark: FakeLark, llm: FakeLLM) -> Any:
    """Settings with streaming cards on, updates at up to 10/s."""
    return settings_for(home, lark.domain, llm.base_url, lark=UNBUDGETED)


def slow_ui_turn(llm: FakeLLM, gate: asyncio.Event | None = None) -> None:
    """A turn that takes > 1 s: a ui_card call, then the answer streamed in small pieces.

    With `gate`, the answer's stream ends (and so the turn) only once the gate is set.
    """
    call = FakeToolCall("ui_card", {"card": SAMPLES["compare"]})
    answer = Reply(text=ANSWER, text_chunk=3, delay=0.2, gate=gate)
    llm.add(Reply(tool_calls=[call], delay=1.3), answer)


def card_shows_answer(fake: FakeLark) -> bool:
    """The live card's element already holds the whole answer."""
    return any(c.elements.get(ELEMENT_ID, "").endswith(ANSWER) for c in fake.cardkit.cards.values())


def plain_answers(fake: FakeLark) -> list[dict[str, Any]]:
    """Messages that carry the answer text itself (not the streaming card entity)."""
    return [m for m in fake.sent if ANSWER[:20] in m["content"]]


def interactive(fake: FakeLark) -> list[dict[str, Any]]:
    """The interactive messages sent, in order."""
    return [m for m in fake.sent if m["msg_type"] == "interactive"]


async def test_ui_card_turn_sends_a_separate_interactive_message(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_tools(("ui_card", {"card": SAMPLES["rank"]})).reply_text("Django leads.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        await s.post_event(message_event("rank frameworks", message_id="om_ui_1"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 2)
        assert await s.app.idle(30)
    text, card = fake_lark.sent
    assert text["body"] == {"text": "Django leads."}
    assert card["msg_type"] == "interactive" and card["reply_to"] == "om_ui_1"
    assert validate_lark_card(card["body"]) == []
    assert card["body"]["header"]["title"]["content"] == "Python web frameworks"
    tool_message = next(m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool")
    assert "Shown to the user as a rank card" in tool_message["content"]


async def test_slow_turn_streams_one_card_and_finalises_it(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    slow_ui_turn(fake_llm)
    async with Served(streaming(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("compare phones", message_id="om_slow_1"))
        await fake_lark.wait_for(lambda: len(interactive(fake_lark)) == 2, timeout=30)
        assert await s.app.idle(30)
    (card,) = fake_lark.cardkit.cards.values()
    stream_msg, ui_msg = interactive(fake_lark)
    assert stream_msg["body"] == {"type": "card", "data": {"card_id": card.card_id}}
    assert stream_msg["reply_to"] == "om_slow_1"
    history = card.element_history[ELEMENT_ID]
    assert (
        any("⚙ **ui_card**" in h for h in history)
        or "⚙ **ui_card**" in card.card["body"]["elements"][0]["content"]
    )
    assert any("✓ **ui_card**" in h for h in history)
    final = card.elements[ELEMENT_ID]
    assert final.endswith(ANSWER) and "✓ **ui_card**" in final
    assert card.streaming_mode is False  # final state: streaming off
    assert card.ops[-1][0] in ("update", "settings")  # one call: new text, or streaming off
    assert card.sequences == sorted(set(card.sequences))  # strictly increasing
    assert ui_msg["body"]["header"]["title"]["content"] == "Phones under 4000 CNY"
    assert not [m for m in fake_lark.sent if m["msg_type"] == "text"]  # the card holds the answer


async def test_quick_turn_gets_no_streaming_card(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("quick")
    async with Served(streaming(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("hi", message_id="om_quick_1"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await s.app.idle(30)
    assert fake_lark.cardkit.cards == {}
    assert fake_lark.sent[0]["body"] == {"text": "quick"}


async def test_cardkit_create_rejected_uses_a_patched_card(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.fail_next(CREATE, status=400, code=230099, msg="card build failed")
    slow_ui_turn(fake_llm)
    async with Served(streaming(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("compare", message_id="om_patch_1"))
        await fake_lark.wait_for(lambda: len(interactive(fake_lark)) == 2, timeout=30)
        assert await s.app.idle(30)
    progress = interactive(fake_lark)[0]
    assert progress["body"]["config"].get("streaming_mode") is None
    assert fake_lark.patches, "the ordinary card is updated by PATCH"
    final = json.loads(fake_lark.patches[-1]["content"])
    assert validate_lark_card(final) == []
    assert final["body"]["elements"][0]["content"].endswith(ANSWER)
    assert final["config"]["summary"]["content"] == "Phones compared: Redmi K70 is the cheapest."


async def test_cardkit_500_on_updates_falls_back_to_a_plain_answer(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.fail_next(CONTENT, status=500, code=500, times=100)
    slow_ui_turn(fake_llm)
    async with Served(streaming(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("compare", message_id="om_500_1"))
        await fake_lark.wait_for(lambda: len(plain_answers(fake_lark)) == 1, timeout=15)
        assert await s.app.idle(30)
    assert len(plain_answers(fake_lark)) == 1, "the answer arrives once, as a plain reply"
    assert "Phones under 4000 CNY" in fake_lark.sent[-1]["content"]  # then the ui card
    (card,) = fake_lark.cardkit.cards.values()
    assert card.streaming_mode is False  # the orphaned card was closed
    assert "next message" in str(card.card)  # and shows no half answer above the real one


async def test_final_card_rejected_11310_falls_back_to_a_plain_answer(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # The answer is on the card before the turn ends, so ending the card is only the settings
    # call (streaming off), and Lark refuses it. Without the gate, whether the updater had
    # pushed the last text before the turn finished was a race: when it had not, the card was
    # ended by a full update instead, the refusal never came, and this test waited in vain.
    fake_lark.fail_next(SETTINGS, status=400, code=11310, msg="element exceeds the limit")
    answered = asyncio.Event()
    slow_ui_turn(fake_llm, gate=answered)
    async with Served(streaming(home, fake_lark, fake_llm)) as s:
        await s.post_event(message_event("compare", message_id="om_11310_1"))
        await fake_lark.wait_for(lambda: card_shows_answer(fake_lark), timeout=30)
        answered.set()
        await fake_lark.wait_for(lambda: len(interactive(fake_lark)) >= 3, timeout=30)
        assert await s.app.idle(30)
    assert [r.route for r in fake_lark.requests if r.fault] == [route_key(SETTINGS)]
    assert len(interactive(fake_lark)) == 3  # the card, the plain answer, the ui card
    (answer,) = plain_answers(fake_lark)
    assert answer["body"]["body"]["elements"][0]["content"] == ANSWER
    assert "Phones under 4000 CNY" in fake_lark.sent[-1]["content"]


async def test_streaming_card_updater_stops_when_shutdown_cancels_the_turn(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    """Regression: a drained-out turn left its card updater running after the App stopped."""
    import asyncio

    fake_llm.add(Reply(text="never delivered", delay=30))
    s = Served(streaming(home, fake_lark, fake_llm))
    await s.__aenter__()
    try:
        await s.post_event(message_event("slow question", message_id="om_cut_1"))
        await fake_lark.wait_for(lambda: len(interactive(fake_lark)) == 1, timeout=30)
    finally:
        await s.close(drain=0.2)
    for _ in range(50):  # cancellation settles within a few loop iterations, not time
        await asyncio.sleep(0)
    live = [t for t in asyncio.all_tasks() if t.get_name() == "lark-stream" and not t.done()]
    assert live == []
