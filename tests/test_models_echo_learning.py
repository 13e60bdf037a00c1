"""Thinking models under names no table knows: the echo follows what the model returned, and a
server's 400 naming `reasoning_content` teaches the rule (retried once, then remembered)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from larkbot.config import LLMConfig
from larkbot.providers.wire import Wire
from tests.fakes.llm import FakeLLM, FakeToolCall
from tests.fakes.llm_quirks import deepseek_reasoner_r1, deepseek_thinking
from tests.model_rig import model_rig

THOUGHT = "Call echo first."
ALIAS = "house-thinker"  # a gateway's custom name: nothing in the tables matches it


def assistants(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def script(llm: FakeLLM, first_thought: str) -> None:
    """Turn 1: a tool call (with `first_thought`) then an answer; turn 2: a plain answer."""
    call = FakeToolCall("echo", {"text": "hi"}, id="call_1")
    llm.reply_tools(call, reasoning=first_thought)
    llm.reply_text("echoed hi", reasoning="Done.")
    llm.reply_text("second answer", reasoning="Easy.")


async def test_reasoning_returned_on_a_tool_turn_goes_back_under_an_unknown_name(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.validate = deepseek_thinking
    script(fake_llm, THOUGHT)
    rig = await model_rig(tmp_path, {"base_url": fake_llm.base_url, "model": ALIAS})
    try:
        assert (await rig.turn("please echo hi"))[0] == "echoed hi"
        assert (await rig.turn("and now?"))[0] == "second answer"
    finally:
        await rig.close()
    assert len(fake_llm.requests) == 3  # no request was refused
    assert assistants(fake_llm.requests[1])[0]["reasoning_content"] == THOUGHT


async def test_a_400_naming_reasoning_content_is_retried_with_it_and_remembered(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """The tool call came without reasoning, yet the server wants the field on it (DeepSeek)."""
    fake_llm.validate = deepseek_thinking
    script(fake_llm, "")
    llm = {"base_url": fake_llm.base_url, "model": ALIAS}
    rig = await model_rig(tmp_path, llm)
    try:
        assert (await rig.turn("please echo hi"))[0] == "echoed hi"
        assert (await rig.turn("and now?"))[0] == "second answer"
    finally:
        await rig.close()
    refused, retried, turn2 = fake_llm.requests[1:]
    assert "reasoning_content" not in assistants(refused)[0]
    assert assistants(retried)[0]["reasoning_content"] == ""
    assert [m["reasoning_content"] for m in assistants(turn2)] == ["", "Done."]  # no 400 again
    assert Wire.for_config(LLMConfig(**llm)).echo == "tool_turns"  # for this process
    other = LLMConfig(base_url=fake_llm.base_url, model="another-alias")
    assert Wire.for_config(other).echo == "returned"  # per base_url + model


async def test_not_streamed_requests_learn_too(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.validate = deepseek_thinking
    fake_llm.reply_text("fine")
    rig = await model_rig(
        tmp_path, {"base_url": fake_llm.base_url, "model": "plain-alias", "stream": False}
    )
    history = [
        {"role": "user", "content": "echo hi"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "hi"},
    ]
    try:
        done = await rig.chain.complete(history)
    finally:
        await rig.close()
    assert done.text == "fine" and len(fake_llm.requests) == 2


async def test_a_server_refusing_echoed_reasoning_is_answered_without_it(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """The older deepseek-reasoner rule behind an alias: any reasoning_content is a 400."""
    fake_llm.validate = deepseek_reasoner_r1
    script(fake_llm, THOUGHT)
    llm = {"base_url": fake_llm.base_url, "model": "old-reasoner"}
    rig = await model_rig(tmp_path, llm)
    try:
        assert (await rig.turn("please echo hi"))[0] == "echoed hi"
        assert (await rig.turn("and now?"))[0] == "second answer"
    finally:
        await rig.close()
    assert len(fake_llm.requests) == 4  # one refusal, then never again
    assert Wire.for_config(LLMConfig(**llm)).echo == "never"


async def test_an_operator_rule_is_never_overridden(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.validate = deepseek_thinking
    script(fake_llm, "")
    rig = await model_rig(
        tmp_path,
        {"base_url": fake_llm.base_url, "model": "pinned-alias", "reasoning_echo": "never"},
    )
    try:
        answer, _, _ = await rig.turn("please echo hi")
    finally:
        await rig.close()
    assert "HTTP 400" in answer and len(fake_llm.requests) == 2


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "echo", "arguments": "{}"}}
