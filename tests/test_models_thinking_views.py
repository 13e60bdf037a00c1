"""Thinking shown where llm.show_thinking allows: the web's REASONING span, the terminal's 💭."""

from __future__ import annotations

import io
from pathlib import Path

from playwright.async_api import expect

from larkbot.chat import TerminalView
from larkbot.events import FinalAnswer, TextDelta, ThinkingDelta
from tests.browser_harness import chromium
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.test_web_browser import TIMEOUT, log_in, say
from tests.web_harness import AUTH, kinds, sse_events, text_of, web_settings

THOUGHT = "The user greets me; a short greeting back will do."


async def web_turn(home: Path, fake_llm: FakeLLM, show: str) -> list[dict[str, object]]:
    fake_llm.reply_text("Hello!", reasoning=THOUGHT)
    settings = web_settings(home, fake_llm.base_url, llm={"show_thinking": show})
    async with Served(settings) as s:
        assert s.http is not None
        async with s.http.post(s.url("/chat"), json={"message": "hi"}, headers=AUTH) as r:
            return [e async for _, e in sse_events(r)]


async def test_thinking_streams_as_a_reasoning_span_before_the_answer(
    home: Path, fake_llm: FakeLLM
) -> None:
    events = await web_turn(home, fake_llm, "dm")
    names = kinds(events)
    start, end = names.index("REASONING_START"), names.index("REASONING_END")
    assert (
        names[start + 1] == "REASONING_MESSAGE_START" and names[end - 1] == "REASONING_MESSAGE_END"
    )
    assert end < names.index("TEXT_MESSAGE_START")  # closed before the answer opens
    thought = "".join(str(e["delta"]) for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert thought == THOUGHT and text_of(events) == "Hello!"  # never part of the answer


async def test_no_reasoning_events_when_thinking_is_not_shown(
    home: Path, fake_llm: FakeLLM
) -> None:
    events = await web_turn(home, fake_llm, "never")
    assert not [k for k in kinds(events) if k.startswith("REASONING")]
    assert text_of(events) == "Hello!"


async def test_the_page_shows_a_collapsed_thinking_panel(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("Hello!", reasoning=THOUGHT)
    settings = web_settings(home, fake_llm.base_url, llm={"show_thinking": "dm"})
    async with Served(settings) as s, chromium() as browser:
        page = await browser.new_page()
        await log_in(page, s.url("").rstrip("/"))
        await say(page, "hi")
        await expect(page.locator(".msg.assistant .body").last).to_have_text(
            "Hello!", timeout=TIMEOUT
        )
        panel = page.locator("details.thinking")
        await expect(panel).to_have_count(1)
        assert await panel.get_attribute("open") is None  # collapsed until clicked
        await expect(panel.locator("pre")).to_have_text(THOUGHT, use_inner_text=False)
        await panel.locator("summary").click()
        await expect(panel.locator("pre")).to_be_visible()


def test_terminal_prints_the_thought_apart_from_the_answer() -> None:
    out = io.StringIO()
    view = TerminalView(out)
    for event in [ThinkingDelta("Two "), ThinkingDelta("steps.\nThen"), TextDelta("Answer")]:
        view.show(event)
    view.show(FinalAnswer("Answer"))
    assert out.getvalue().splitlines() == ["  💭 Two steps.", "     Then", "Answer"]
