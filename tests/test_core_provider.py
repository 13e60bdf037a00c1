"""OpenAICompatProvider against FakeLLM: delta assembly, provider quirks, retries, clear errors."""

from __future__ import annotations

import time

import httpx
import pytest

from larkbot.config import LLMConfig
from larkbot.errors import ProviderError
from larkbot.llm_check import user_facing
from larkbot.providers.assemble import ThinkFilter, ToolCallAssembler
from larkbot.providers.base import Completion, TextChunk, ToolCall
from larkbot.providers.openai_compat import OpenAICompatProvider
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply

MESSAGES = [{"role": "user", "content": "hi"}]
ARGS_A = {"path": "/tmp/笔记/📝 notes.md", "content": 'line "one"\n\\ two ✓', "n": [1, 2]}
ARGS_B = {"command": "echo 你好 && ls -la", "timeout": 5}


def provider(base_url: str, http: httpx.AsyncClient, **cfg: object) -> OpenAICompatProvider:
    config = LLMConfig(base_url=base_url, api_key="k", model="fake-model", **cfg)  # type: ignore[arg-type]
    return OpenAICompatProvider(config, http, backoff_base=0.01)


async def stream_all(p: OpenAICompatProvider) -> tuple[str, list[ToolCall], Completion]:
    text, calls, done = "", [], None
    async for ev in p.stream(MESSAGES, [{"type": "function", "function": {"name": "x"}}]):
        if isinstance(ev, TextChunk):
            text += ev.text
        elif isinstance(ev, ToolCall):
            calls.append(ev)
        else:
            done = ev
    assert done is not None
    return text, calls, done


@pytest.mark.parametrize("args_chunk", [1, 3, 7])
@pytest.mark.parametrize("byte_chunk", [0, 2, 5])  # 2 and 5 split 3-byte UTF-8 chars
async def test_interleaved_split_deltas_assemble(
    fake_llm: FakeLLM, args_chunk: int, byte_chunk: int
) -> None:
    fake_llm.reply_tools(
        FakeToolCall("file_write", ARGS_A, id="call_a"),
        FakeToolCall("shell", ARGS_B, id="call_b"),
        args_chunk=args_chunk,
        interleave=True,
        byte_chunk=byte_chunk,
    )
    async with httpx.AsyncClient() as http:
        text, calls, done = await stream_all(provider(fake_llm.base_url, http))
    assert text == ""
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "file_write", ARGS_A),
        ("call_b", "shell", ARGS_B),
    ]
    assert done.finish_reason == "tool_calls" and done.tool_calls == calls


async def test_quirks_missing_ids_index_finish_and_reasoning(fake_llm: FakeLLM) -> None:
    fake_llm.add(
        Reply(
            text="答案是 42",
            reasoning="let me think about this",
            tool_calls=[FakeToolCall("shell", ARGS_B, id="")],
            omit_index=True,
            omit_finish_reason=True,
            args_chunk=4,
            byte_chunk=2,
        )
    )
    async with httpx.AsyncClient() as http:
        text, calls, done = await stream_all(provider(fake_llm.base_url, http))
    assert text == "答案是 42"
    assert len(calls) == 1 and calls[0].arguments == ARGS_B and calls[0].id.startswith("call_")
    assert done.finish_reason == "tool_calls"


async def test_non_streaming_completion(fake_llm: FakeLLM) -> None:
    fake_llm.reply_tools(FakeToolCall("shell", ARGS_B, id=""), text="running it", reasoning="hmm")
    async with httpx.AsyncClient() as http:
        done = await provider(fake_llm.base_url, http).complete(MESSAGES)
    assert done.text == "running it"
    assert done.tool_calls[0].arguments == ARGS_B and done.tool_calls[0].id
    assert fake_llm.requests[0]["stream"] is False


async def test_retries_5xx_and_429_then_succeeds(fake_llm: FakeLLM) -> None:
    fake_llm.reply_error(503, "busy")
    fake_llm.reply_error(429, "slow down", headers={"Retry-After": "0"})
    fake_llm.reply_text("finally")
    async with httpx.AsyncClient() as http:
        text, _, _ = await stream_all(provider(fake_llm.base_url, http))
    assert text == "finally" and len(fake_llm.requests) == 3


async def test_retries_are_bounded(fake_llm: FakeLLM) -> None:
    for _ in range(5):
        fake_llm.reply_error(500, "down")
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderError, match="HTTP 500"):
            await provider(fake_llm.base_url, http, max_retries=2).complete(MESSAGES)
    assert len(fake_llm.requests) == 3


async def test_long_retry_after_fails_at_once(fake_llm: FakeLLM) -> None:
    fake_llm.reply_error(429, "quota", headers={"Retry-After": "3600"})
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderError, match="3600 s"):
            await provider(fake_llm.base_url, http).complete(MESSAGES)
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize(
    ("status", "names"), [(401, ["llm.api_key"]), (404, ["llm.base_url", "llm.model"])]
)
async def test_auth_and_not_found_errors_name_the_keys(
    fake_llm: FakeLLM, status: int, names: list[str]
) -> None:
    fake_llm.reply_error(status, "nope")
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderError) as info:
            await stream_all(provider(fake_llm.base_url, http))
    assert all(n in str(info.value) for n in names)
    assert len(fake_llm.requests) == 1  # not retried


async def test_unreachable_endpoint_is_a_clear_error() -> None:
    async with httpx.AsyncClient() as http:
        p = provider("http://127.0.0.1:9/v1", http, max_retries=1)
        with pytest.raises(ProviderError, match=r"Cannot reach .*llm.base_url"):
            await p.complete(MESSAGES)


def _offline(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution", request=request)


@pytest.mark.parametrize("key", ["", "sk-set"])
async def test_an_unreachable_hosted_endpoint_without_a_key_names_the_key(key: str) -> None:
    config = LLMConfig(base_url="https://api.openai.com/v1", api_key=key, max_retries=0)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=httpx.MockTransport(_offline)) as http:
        with pytest.raises(ProviderError) as info:
            await OpenAICompatProvider(config, http).complete(MESSAGES)
    text = str(info.value)
    assert text.startswith("Cannot reach the LLM endpoint https://api.openai.com/v1")
    if key:  # a key is set: only the endpoint can be wrong
        assert "api_key" not in text and "LLM_API_KEY" not in text
    else:  # offline or blocked, and no key either: both fixes, not "check llm.base_url" alone
        assert "llm.api_key is empty" in text and "LLM_API_KEY" in text
        assert "a local server (Ollama, vLLM) needs none" in text and "llm.base_url" in text
    assert user_facing(info.value, is_owner=True).endswith(text)  # what web and terminal show


async def test_timeout_is_a_clear_error(fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply(text="late", delay=1.0))
    async with httpx.AsyncClient() as http:
        p = provider(fake_llm.base_url, http, timeout_seconds=0.2, max_retries=0)
        with pytest.raises(ProviderError, match=r"llm\.timeout_seconds"):
            await stream_all(p)


async def test_streamed_answers_reuse_one_connection(fake_llm: FakeLLM) -> None:
    # closing a response before its last byte dropped its connection: a new one (a TLS
    # handshake to a real endpoint) for every model call
    fake_llm.add(*(Reply(text=f"answer {i}") for i in range(3)))
    async with httpx.AsyncClient() as http:
        p = provider(fake_llm.base_url, http)
        texts = [(await stream_all(p))[0] for _ in range(3)]
    assert texts == ["answer 0", "answer 1", "answer 2"]
    assert len(fake_llm.connections) == 1


async def test_stream_held_open_after_done_still_answers_promptly(fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply(text="done early", hold_open=60.0))
    async with httpx.AsyncClient() as http:
        p = provider(fake_llm.base_url, http, max_retries=0)
        started = time.monotonic()
        text, _, done = await stream_all(p)
    assert (text, done.finish_reason) == ("done early", "stop")
    # not the server's 60 s: the drain gives up first (a wide margin for a loaded machine)
    assert time.monotonic() - started < 30


async def test_connection_cut_mid_stream_is_an_error(fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply(text="partial answer", stream_error=True))
    async with httpx.AsyncClient() as http:
        p = provider(fake_llm.base_url, http, max_retries=0)
        with pytest.raises(ProviderError):
            await stream_all(p)


def test_assembler_handles_repeated_names_and_reused_index() -> None:
    a = ToolCallAssembler()
    a.feed([{"index": 0, "id": "x", "function": {"name": "shell", "arguments": '{"comm'}}])
    a.feed([{"index": 0, "function": {"name": "shell", "arguments": 'and": "ls"}'}}])
    # Ollama-style: a second complete call that reuses index 0 with a new id
    a.feed([{"index": 0, "id": "y", "function": {"name": "echo", "arguments": {"text": "t"}}}])
    calls = a.calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("x", "shell", {"command": "ls"}),
        ("y", "echo", {"text": "t"}),
    ]


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["<th", "ink>secret</thi", "nk>\n\nHello"], "Hello"),
        (["  <think>x</think>", "", "\n", "Hi"], "Hi"),
        (["<t", "able>"], "<table>"),
        (["Hello <think>kept</think>"], "Hello <think>kept</think>"),
        (["<thi"], "<thi"),
    ],
)
def test_think_filter(pieces: list[str], expected: str) -> None:
    f = ThinkFilter()
    assert "".join(f.feed(p) for p in pieces) + f.flush() == expected
