"""A real third-party OpenAI-compatible server: the LiteLLM proxy (PyPI), started on loopback.

Two routes: a LiteLLM mock model (LiteLLM answers itself), and a DeepSeek route whose upstream
is our DeepSeek-like fake, so a tool loop crosses LiteLLM's own request/response translation
both ways (reasoning_content must survive it, or the fake answers 400).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.llm import FakeLLM, FakeToolCall
from tests.fakes.llm_quirks import deepseek_thinking
from tests.litellm_gateway import MASTER_KEY, MOCK_TEXT, Gateway, start_gateway
from tests.model_rig import model_rig

pytestmark = pytest.mark.timeout(180)  # the first test may wait for the proxy to start


@pytest.fixture
def gateway() -> Gateway:
    """The session's LiteLLM proxy, ready."""
    proxy = start_gateway()
    proxy.wait_ready()
    return proxy


async def test_litellm_mock_model_answers_through_the_agent(
    gateway: Gateway, tmp_path: Path
) -> None:
    base = gateway.base_url
    rig = await model_rig(tmp_path, {"base_url": base, "api_key": MASTER_KEY, "model": "mock-gpt"})
    try:
        answer, streamed, _ = await rig.turn("hi")
        totals = await rig.usage.totals(session_id="s1")
    finally:
        await rig.close()
    assert answer == MOCK_TEXT and streamed == MOCK_TEXT
    assert totals.requests == 1 and totals.completion > 0  # LiteLLM's usage chunk was read


async def test_deepseek_tool_loop_through_litellm(gateway: Gateway, tmp_path: Path) -> None:
    base = gateway.base_url
    async with FakeLLM(port=gateway.upstream) as deepseek:
        deepseek.validate = deepseek_thinking
        deepseek.reply_tools(
            FakeToolCall("echo", {"text": "hi"}, id="call_1"), reasoning="Call echo first."
        )
        deepseek.reply_text("echoed hi", reasoning="Done.")
        rig = await model_rig(
            tmp_path,
            {"base_url": base, "api_key": MASTER_KEY, "model": "ds-flash", "provider": "deepseek"},
        )
        try:
            answer, streamed, _ = await rig.turn("please echo hi")
        finally:
            await rig.close()
    assert answer == "echoed hi" and "Call echo" not in streamed
    second = deepseek.requests[1]
    replayed = [m for m in second["messages"] if m["role"] == "assistant"]
    assert replayed[0]["reasoning_content"] == "Call echo first."  # survived LiteLLM


async def test_deepseek_under_a_gateway_alias_needs_no_provider_setting(
    gateway: Gateway, tmp_path: Path
) -> None:
    """`ds-flash` says nothing of DeepSeek: the reasoning it returned goes back all the same."""
    async with FakeLLM(port=gateway.upstream) as deepseek:
        deepseek.validate = deepseek_thinking
        deepseek.reply_tools(
            FakeToolCall("echo", {"text": "hi"}, id="call_1"), reasoning="Call echo first."
        )
        deepseek.reply_text("echoed hi", reasoning="Done.")
        llm = {"base_url": gateway.base_url, "api_key": MASTER_KEY, "model": "ds-flash"}
        rig = await model_rig(tmp_path, llm)
        try:
            answer, _, _ = await rig.turn("please echo hi")
        finally:
            await rig.close()
    assert answer == "echoed hi" and len(deepseek.requests) == 2
    replayed = [m for m in deepseek.requests[1]["messages"] if m["role"] == "assistant"]
    assert replayed[0]["reasoning_content"] == "Call echo first."


async def test_a_refusal_relayed_by_the_gateway_teaches_the_echo(
    gateway: Gateway, tmp_path: Path
) -> None:
    """A generic OpenAI route whose upstream 400s for a missing reasoning_content: one retry."""
    async with FakeLLM(port=gateway.upstream) as upstream:
        upstream.validate = deepseek_thinking
        upstream.reply_tools(FakeToolCall("echo", {"text": "hi"}, id="call_1"))
        upstream.reply_text("echoed hi", reasoning="Done.")
        llm = {"base_url": gateway.base_url, "api_key": MASTER_KEY, "model": "house-thinker"}
        rig = await model_rig(tmp_path, llm)
        try:
            answer, _, _ = await rig.turn("please echo hi")
        finally:
            await rig.close()
    assert answer == "echoed hi", gateway.tail()
    retried = [m for m in upstream.requests[-1]["messages"] if m["role"] == "assistant"]
    assert retried[0]["reasoning_content"] == ""
