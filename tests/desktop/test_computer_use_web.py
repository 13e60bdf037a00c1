"""computer_use on the web: asked once per session, type/key every time; screenshots as events."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import chat_turn, consents, web_settings

DESKTOP = {"enabled": True, "start_xvfb": True, "settle_seconds": 0.05}


def results(events: list[dict]) -> list[str]:
    return [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]


def attachments(events: list[dict]) -> list[dict]:
    return [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "attachment"]


async def test_consent_per_session_and_every_time_for_typing(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_tools(("computer_use", {"action": "click", "x": 10, "y": 10})).reply_text("1")
    fake_llm.reply_tools(("computer_use", {"action": "screenshot"})).reply_text("2")
    fake_llm.reply_tools(("computer_use", {"action": "type", "text": "hi"})).reply_text("3")
    async with Served(web_settings(home, fake_llm.base_url, computer_use=DESKTOP)) as s:
        assert s.http is not None
        base = s.url("")
        one = await chat_turn(s.http, base, "click", answer="allow_session")
        session = one[0]["threadId"]
        two = await chat_turn(s.http, base, "look", session_id=session)
        three = await chat_turn(s.http, base, "type", session_id=session, answer="allow_once")
    (asked,) = consents(one)
    assert asked["tool"] == "computer_use" and asked["always"] is False
    assert consents(two) == []  # the session's grant covers other actions
    (typing,) = consents(three)
    assert typing["always"] is True and "'hi'" in typing["description"]
    assert results(one)[0].startswith("click at (10, 10); screen 1280×800; cursor at (10, 10)")
    assert results(three)[0].startswith("typed 2 characters")
    for turn in (one, two, three):
        (shot,) = attachments(turn)
        assert shot["tool"] == "computer_use" and shot["kind"] == "image"
        assert shot["name"].startswith("computer_use-") and shot["mime"] == "image/png"
