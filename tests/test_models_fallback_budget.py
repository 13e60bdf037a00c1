"""Fallbacks after the primary's retries; a long session kept within its token budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from larkbot.context import RequestContext
from larkbot.history_budget import CUT_NOTE, SUMMARY_PROMPT, for_display
from larkbot.model_status import status_text
from larkbot.providers.fallback import RESTART_NOTE
from larkbot.providers.tokens import messages_tokens
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.model_rig import model_rig
from tools.base import ContextTool


async def test_primary_500_three_times_then_the_fallback_answers_once(tmp_path: Path) -> None:
    async with FakeLLM() as primary, FakeLLM() as backup:
        for _ in range(3):
            primary.reply_error(500, "overloaded")
        backup.reply_text("answer from the fallback")
        rig = await model_rig(
            tmp_path,
            {
                "base_url": primary.base_url,
                "model": "main-model",
                "max_retries": 2,  # 3 attempts
                "fallbacks": [{"base_url": backup.base_url, "model": "backup-model"}],
                "prices": {"backup-model": {"input": 1.0, "output": 2.0, "currency": "CNY"}},
            },
        )
        try:
            answer, _, _ = await rig.turn("hello")
            status = await status_text(rig.settings, rig.chain, rig.usage, "s1")
            totals = await rig.usage.totals(session_id="s1")
        finally:
            await rig.close()
    assert answer == "answer from the fallback"
    assert len(primary.requests) == 3 and len(backup.requests) == 1
    assert backup.requests[0]["model"] == "backup-model"
    assert "main-model@" in status and "→ backup-model@" in status and "HTTP 500" in status
    assert "Last answer from: backup-model@" in status
    assert totals.requests == 1 and totals.currency == "CNY"
    assert abs(totals.cost - (10 * 1.0 + 5 * 2.0) / 1e6) < 1e-12


async def test_an_answer_broken_mid_stream_is_restarted_by_the_fallback(tmp_path: Path) -> None:
    async with FakeLLM() as primary, FakeLLM() as backup:
        primary.reply_text("The first half and", stream_error=3)  # role, then text
        backup.reply_text("The whole answer.")
        rig = await model_rig(
            tmp_path,
            {
                "base_url": primary.base_url,
                "model": "m",
                "fallbacks": [{"base_url": backup.base_url, "model": "b"}],
            },
        )
        try:
            answer, streamed, _ = await rig.turn("hello")
            history = await rig.store.load("s1")
        finally:
            await rig.close()
    assert answer == "The whole answer." and history[-1]["content"] == "The whole answer."
    assert streamed.index(RESTART_NOTE) < streamed.index("The whole answer.")
    assert len(primary.requests) == 1  # no retry once text was shown; the fallback starts over


async def test_when_every_endpoint_fails_the_error_says_so(tmp_path: Path) -> None:
    async with FakeLLM() as primary, FakeLLM() as backup:
        primary.reply_error(503, "busy")
        backup.reply_error(502, "bad gateway")
        rig = await model_rig(
            tmp_path,
            {
                "base_url": primary.base_url,
                "model": "m",
                "max_retries": 0,
                "fallbacks": [{"base_url": backup.base_url, "model": "b"}],
            },
        )
        try:
            answer, _, _ = await rig.turn("hello")
        finally:
            await rig.close()
    assert "HTTP 502" in answer and f"after 1 switch(es) from m@{primary.base_url}" in answer


async def test_a_refusal_is_not_a_reason_to_switch(tmp_path: Path) -> None:
    async with FakeLLM() as primary, FakeLLM() as backup:
        primary.reply_error(400, "bad request body")
        rig = await model_rig(
            tmp_path,
            {
                "base_url": primary.base_url,
                "model": "m",
                "fallbacks": [{"base_url": backup.base_url, "model": "b"}],
            },
        )
        try:
            answer, _, _ = await rig.turn("hello")
        finally:
            await rig.close()
    assert "HTTP 400" in answer and backup.requests == []


async def test_200_turn_session_stays_within_budget_with_a_summary(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    budget = 1_500
    summaries = 0

    def respond(body: dict[str, Any]) -> Reply:
        nonlocal summaries
        if body["messages"][0]["content"] == SUMMARY_PROMPT:
            summaries += 1
            return Reply(text=f"SUMMARY-{summaries}: the user counts turns.")
        turn = body["messages"][-1]["content"].split()[1]
        return Reply(text=f"Noted turn {turn}. " + "Some detail. " * 12)

    fake_llm.responder = respond
    rig = await model_rig(
        tmp_path, {"base_url": fake_llm.base_url, "model": "m"}, history_max_tokens=budget
    )
    try:
        for n in range(200):
            answer, _, _ = await rig.turn(f"turn {n} " + "filler words here " * 10)
            assert answer.startswith(f"Noted turn {n}.")
        stored = await rig.store.load("s1")
    finally:
        await rig.close()
    # the web's view of the session shows every turn once, no markers, no copies of kept turns
    shown = for_display(stored)
    assert len(stored) > len(shown) == 400
    assert [m["content"].split()[1] for m in shown[::2]] == [str(n) for n in range(200)]
    chats = [r for r in fake_llm.requests if r["messages"][0]["content"] != SUMMARY_PROMPT]
    assert len(chats) == 200 and summaries >= 5
    for body in chats:
        history = body["messages"][1:-1]  # between the system prompt and the new question
        assert messages_tokens(history) <= budget
    # the note of the latest summary is in the very next request's system prompt
    last_summary = max(
        i for i, r in enumerate(fake_llm.requests) if r["messages"][0]["content"] == SUMMARY_PROMPT
    )
    following = fake_llm.requests[last_summary + 1]
    assert f"SUMMARY-{summaries}:" in following["messages"][0]["content"]
    # and the summariser saw the previous note, so nothing earlier is silently dropped
    second = [r for r in fake_llm.requests if r["messages"][0]["content"] == SUMMARY_PROMPT][1]
    assert "SUMMARY-1:" in second["messages"][1]["content"]


class RepeatEcho(ContextTool):
    """echo with a repeat count: a long result from short arguments."""

    name = "echo"
    description = "Echo text back, several times."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
        "required": ["text", "times"],
    }

    async def run_with(self, ctx: RequestContext, **kw: Any) -> str:
        return (kw["text"] + " ") * kw["times"]


async def test_one_turn_larger_than_a_small_budget_has_its_tool_result_cut(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    big = "word " * 1_500  # 7,500 characters: ~2,250 tokens against a 600-token budget
    fake_llm.reply_tools(FakeToolCall("echo", {"text": "word", "times": 1_500}))
    fake_llm.reply_text("Echoed.")
    fake_llm.reply_text("Still here.")
    rig = await model_rig(
        tmp_path, {"base_url": fake_llm.base_url, "model": "m"}, history_max_tokens=600
    )
    rig.agent.registry.register(RepeatEcho())
    try:
        assert (await rig.turn("echo a lot"))[0] == "Echoed."
        assert (await rig.turn("and now?"))[0] == "Still here."
        stored = await rig.store.load("s1")
    finally:
        await rig.close()
    history = fake_llm.requests[2]["messages"][1:-1]
    assert messages_tokens(history) <= 600
    tool = next(m for m in history if m["role"] == "tool")
    assert tool["content"].endswith(CUT_NOTE) and tool["content"].startswith("word word")
    assert any(m.get("content") == big for m in stored if m["role"] == "tool")  # stored in full
