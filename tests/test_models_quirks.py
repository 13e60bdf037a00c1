"""Each provider quirk family against a loopback fake that enforces it, through a real tool loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.fakes.llm_quirks import (
    dashscope,
    deepseek_reasoner_r1,
    deepseek_thinking,
    kimi_thinking,
    openai_reasoning,
)
from tests.model_rig import model_rig, thinking_of

THOUGHT = "The user wants an echo; I will call the echo tool first."


def assistants(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def tool_loop(llm: FakeLLM, **reply: Any) -> None:
    """Turn 1: a tool call then an answer; turn 2: a plain answer."""
    llm.reply_tools(FakeToolCall("echo", {"text": "hi"}, id="call_1"), reasoning=THOUGHT, **reply)
    llm.reply_text("echoed hi", reasoning="It worked.", **reply)
    llm.reply_text("second answer", reasoning="Easy.", **reply)


async def test_deepseek_thinking_passes_reasoning_back_on_tool_turns(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.validate = deepseek_thinking
    tool_loop(fake_llm)
    rig = await model_rig(
        tmp_path,
        {"base_url": fake_llm.base_url, "provider": "deepseek", "model": "deepseek-v4-flash"},
    )
    try:
        answer, streamed, events = await rig.turn("please echo hi")
        assert answer == "echoed hi" and THOUGHT not in streamed
        assert thinking_of(events) == ""  # llm.show_thinking: never
        answer2, _, _ = await rig.turn("and now?")
        assert answer2 == "second answer"
    finally:
        await rig.close()
    round2, turn2 = fake_llm.requests[1], fake_llm.requests[2]
    assert assistants(round2)[0]["reasoning_content"] == THOUGHT
    # turn 2 replays turn 1 from the database: both assistant messages carry their reasoning
    assert [m["reasoning_content"] for m in assistants(turn2)] == [THOUGHT, "It worked."]
    assert all(r.get("stream_options") == {"include_usage": True} for r in fake_llm.requests)


async def test_deepseek_fake_refuses_a_dropped_reasoning(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """The control: the same loop with reasoning stripped is what larkbot did before (a 400)."""
    fake_llm.validate = deepseek_thinking
    tool_loop(fake_llm)
    rig = await model_rig(
        tmp_path,
        {
            "base_url": fake_llm.base_url,
            "provider": "deepseek",
            "model": "deepseek-v4-flash",
            "reasoning_echo": "never",
        },
    )
    try:
        answer, _, _ = await rig.turn("please echo hi")
    finally:
        await rig.close()
    assert "HTTP 400" in answer and "reasoning_content" in answer


async def test_deepseek_behind_an_unknown_gateway_needs_no_provider_setting(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """SiliconFlow, one-api, Ark…: DeepSeek V3.2+ keeps its rule under its own model id."""
    fake_llm.validate = deepseek_thinking
    tool_loop(fake_llm)
    rig = await model_rig(
        tmp_path, {"base_url": fake_llm.base_url, "model": "deepseek-ai/DeepSeek-V3.2"}
    )
    try:
        assert (await rig.turn("please echo hi"))[0] == "echoed hi"
        assert (await rig.turn("and now?"))[0] == "second answer"
    finally:
        await rig.close()
    assert rig.chain.primary.wire.profile.name == "generic"
    assert assistants(fake_llm.requests[1])[0]["reasoning_content"] == THOUGHT


async def test_older_deepseek_reasoner_never_gets_reasoning(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.validate = deepseek_reasoner_r1
    tool_loop(fake_llm)
    rig = await model_rig(
        tmp_path,
        {
            "base_url": fake_llm.base_url,
            "provider": "deepseek",
            "model": "deepseek-r1",
            "thinking": "on",
            "temperature": 0.5,
        },
    )
    try:
        assert (await rig.turn("please echo hi"))[0] == "echoed hi"
        assert (await rig.turn("and now?"))[0] == "second answer"
    finally:
        await rig.close()
    assert len(fake_llm.requests) == 3
    for body in fake_llm.requests:
        assert all("reasoning_content" not in m for m in body["messages"])
        assert "thinking" not in body and "temperature" not in body  # thinking mode: no effect


async def test_older_rule_fake_refuses_echoed_reasoning(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.validate = deepseek_reasoner_r1
    tool_loop(fake_llm)
    rig = await model_rig(
        tmp_path,
        {
            "base_url": fake_llm.base_url,
            "provider": "deepseek",
            "model": "deepseek-r1",
            "reasoning_echo": "all",
        },
    )
    try:
        answer, _, _ = await rig.turn("please echo hi")
    finally:
        await rig.close()
    assert "HTTP 400" in answer


async def test_kimi_k2_5_tool_loop_keeps_reasoning_and_default_sampling(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.validate = kimi_thinking
    tool_loop(fake_llm)
    rig = await model_rig(
        tmp_path,
        {
            "base_url": fake_llm.base_url,
            "provider": "kimi",
            "model": "kimi-k2.5",
            "temperature": 0.3,  # refused by kimi-k2.5, so never sent
        },
    )
    try:
        assert (await rig.turn("please echo hi"))[0] == "echoed hi"
        assert (await rig.turn("and now?"))[0] == "second answer"
    finally:
        await rig.close()
    assert assistants(fake_llm.requests[1])[0]["reasoning_content"] == THOUGHT


def qwen_responder(body: dict[str, Any]) -> Reply:
    """Thinks (reasoning_content deltas) only when enable_thinking is on, like DashScope."""
    thinking = bool(body.get("enable_thinking"))
    last = body["messages"][-1]
    if last["role"] == "user" and "echo" in str(last["content"]):
        call = FakeToolCall("echo", {"text": "你好"}, id="call_q")
        return Reply(tool_calls=[call], reasoning="先调用工具。" if thinking else "", args_chunk=3)
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 40,
        "total_tokens": 160,
        "completion_tokens_details": {"reasoning_tokens": 25},
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    return Reply(text="工具说：你好", reasoning="结果正确。" if thinking else "", usage=usage)


async def test_qwen_enable_thinking_stream_tool_loop(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.validate = dashscope
    fake_llm.responder = qwen_responder
    rig = await model_rig(
        tmp_path,
        {
            "base_url": fake_llm.base_url,
            "provider": "qwen",
            "model": "qwen3-32b",
            "thinking": "on",
            "max_tokens": 512,
            "show_thinking": "dm",
        },
    )
    try:
        answer, streamed, events = await rig.turn("please echo 你好")
        done = await rig.chain.complete([{"role": "user", "content": "hi"}])  # not streamed
        totals = await rig.usage.totals(session_id="s1")
    finally:
        await rig.close()
    assert answer == "工具说：你好" and "先调用" not in streamed
    assert thinking_of(events) == "先调用工具。结果正确。"  # shown in a DM, not as the answer
    first, second, plain = fake_llm.requests
    assert first["enable_thinking"] is True and first["stream"] is True
    assert first["max_completion_tokens"] == 512 and "max_tokens" not in first
    assert all("reasoning_content" not in m for m in second["messages"])  # only content back
    assert plain["enable_thinking"] is False and done.text  # thinking works only streamed
    assert (totals.requests, totals.prompt, totals.cached, totals.reasoning) == (2, 130, 100, 25)


async def test_qwen_thinking_panel_stays_out_of_groups(fake_llm: FakeLLM, tmp_path: Path) -> None:
    from larkbot.context import RequestContext

    fake_llm.responder = qwen_responder
    rig = await model_rig(
        tmp_path,
        {
            "base_url": fake_llm.base_url,
            "provider": "qwen",
            "model": "qwen3-32b",
            "thinking": "on",
            "show_thinking": "dm",
        },
    )
    group = RequestContext(
        interface="lark", session_id="g", sender_id="ou_owner", is_owner=True, chat_type="group"
    )
    try:
        answer, _, events = await rig.turn("hello", session="g", ctx=group)
    finally:
        await rig.close()
    assert answer == "工具说：你好" and thinking_of(events) == ""


async def test_ollama_like_tool_call_format(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """Ollama: `reasoning` field, every call whole in one delta, no index, finish "stop"."""
    ollama = {"reasoning_field": "reasoning", "finish_reason": "stop"}
    fake_llm.reply_tools(
        FakeToolCall("echo", {"text": "one"}, id="call_a"),
        FakeToolCall("echo", {"text": "two"}, id="call_b"),
        reasoning="Two echoes.",
        calls_in_one_delta=True,
        omit_index=True,
        **ollama,
    )
    fake_llm.reply_text("<think>\nsumming up\n</think>\n\nboth echoed", **ollama)
    rig = await model_rig(
        tmp_path, {"base_url": fake_llm.base_url, "provider": "ollama", "model": "qwen3:8b"}
    )
    try:
        answer, streamed, _ = await rig.turn("echo one and two")
        history = await rig.store.load("s1")
    finally:
        await rig.close()
    assert answer == "both echoed" and "summing" not in streamed
    results = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert [r.split(" ")[0] for r in results] == ["one", "two"]
    assert all("reasoning_content" not in m for m in fake_llm.requests[1]["messages"])
    assert [m.get("reasoning_content") for m in history if m["role"] == "assistant"] == [
        "Two echoes.",
        "summing up",
    ]


async def test_openai_reasoning_model_parameters(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.validate = openai_reasoning
    fake_llm.reply_text("fine")
    rig = await model_rig(
        tmp_path,
        {
            "base_url": fake_llm.base_url,
            "provider": "openai",
            "model": "o3-mini",
            "max_tokens": 300,
            "temperature": 0.3,
            "reasoning_effort": "low",
        },
    )
    try:
        answer, _, _ = await rig.turn("hi")
    finally:
        await rig.close()
    body = fake_llm.requests[0]
    assert answer == "fine"
    assert body["max_completion_tokens"] == 300 and body["reasoning_effort"] == "low"
