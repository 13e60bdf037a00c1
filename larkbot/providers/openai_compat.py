"""OpenAI-compatible Chat Completions (OpenAI, DeepSeek, Qwen/DashScope, Ollama, vLLM, …)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from larkbot.config import LLMConfig
from larkbot.errors import ProviderError
from larkbot.logs import get_logger
from larkbot.misconfig import LLM_KEY_FIX, lacks_key
from larkbot.providers.assemble import ThinkFilter, ToolCallAssembler, split_think
from larkbot.providers.base import (
    Completion,
    Message,
    ReasoningChunk,
    StreamEvent,
    TextChunk,
    ToolCall,
)
from larkbot.providers.sse import sse_payloads
from larkbot.providers.wire import Wire, reasoning_of

DRAIN_LINES = 8  # lines read after `[DONE]` so the connection goes back to the pool
DRAIN_SECONDS = 0.5  # for them at most
log = get_logger(__name__)

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 30.0  # seconds; a longer Retry-After fails at once instead of hanging the turn


class _Retry(Exception):
    def __init__(self, error: ProviderError, wait: float | None = None) -> None:
        self.error, self.wait = error, wait


def _completions_url(base_url: str) -> str:
    """{base_url}/chat/completions, keeping a query (Azure's ?api-version=…) at the end."""
    base, _, query = base_url.partition("?")
    return base.rstrip("/") + "/chat/completions" + (f"?{query}" if query else "")


def _error_message(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300] or "(empty body)"
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        return str(err.get("message") or err.get("msg") or err)[:300]
    return str(err)[:300]


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAICompatProvider:
    """Chat Completions over one shared httpx.AsyncClient, with bounded, jittered retries."""

    def __init__(
        self,
        cfg: LLMConfig,
        http: httpx.AsyncClient,
        *,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
    ) -> None:
        self.cfg = cfg
        self.http = http
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.wire = Wire.for_config(cfg)
        self.url = _completions_url(cfg.base_url)

    def _payload(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None, stream: bool
    ) -> dict[str, Any]:
        return self.wire.payload(messages, tools, stream)

    def _headers(self) -> dict[str, str]:
        return self.wire.headers()

    def _status_error(self, status: int, body: bytes, headers: httpx.Headers) -> Exception:
        msg = _error_message(body)
        if status in (401, 403):
            return ProviderError(
                f"The LLM endpoint rejected the API key (HTTP {status}: {msg}). "
                "Check llm.api_key (e.g. LLM_API_KEY in the environment).",
                status,
            )
        if status == 404:
            return ProviderError(
                f"The LLM endpoint answered 404 for {self.url} ({msg}). Check llm.base_url "
                f"(usually ends in /v1) and llm.model ({self.cfg.model!r}).",
                status,
            )
        if status in RETRY_STATUSES or status >= 500:
            wait = _retry_after(headers)
            err = ProviderError(
                f"The LLM endpoint failed (HTTP {status}: {msg}).", status, retryable=True
            )
            if wait is not None and wait > MAX_RETRY_AFTER:
                return ProviderError(
                    f"The LLM endpoint is rate limiting (HTTP {status}); it asks to wait "
                    f"{wait:.0f} s. Try again later. ({msg})",
                    status,
                    retryable=True,
                )
            return _Retry(err, wait)
        hint = " Check llm.model." if "model" in msg.lower() else ""
        return ProviderError(
            f"The LLM endpoint refused the request (HTTP {status}: {msg}).{hint}", status
        )

    def _transport_error(self, err: Exception) -> _Retry:
        base = self.cfg.base_url
        if isinstance(err, httpx.TimeoutException):
            text = (
                f"The LLM endpoint {base} did not answer within {self.cfg.timeout_seconds:g} s "
                "(llm.timeout_seconds)."
            )
        elif isinstance(err, httpx.ConnectError):
            text = (
                f"Cannot reach the LLM endpoint {base} ({err}). "
                "Check llm.base_url and that the server is running."
            )
        else:
            text = f"The connection to the LLM endpoint {base} broke ({type(err).__name__}: {err})."
        return _Retry(ProviderError(text + self._missing_key_note(), retryable=True))

    def _missing_key_note(self) -> str:
        """A hosted endpoint out of reach with no key at all: "check llm.base_url" alone sends a
        newcomer (offline, or where the default endpoint is blocked) after the wrong setting."""
        return f" llm.api_key is empty too: {LLM_KEY_FIX}." if lacks_key(self.cfg) else ""

    def _backoff(self, attempt: int, hint: float | None) -> float:
        if hint is not None:
            return hint
        return min(self.backoff_cap, self.backoff_base * 2**attempt) * random.uniform(0.5, 1.5)

    async def _retrying(self, attempt_fn: Any) -> Any:
        """Run `attempt_fn()` up to 1 + max_retries times, sleeping between retryable failures."""
        for attempt in range(self.cfg.max_retries + 1):
            try:
                return await attempt_fn()
            except _Retry as retry:
                if attempt >= self.cfg.max_retries:
                    raise retry.error from None
                wait = self._backoff(attempt, retry.wait)
                log.warning(
                    "llm_retry", attempt=attempt + 1, wait=round(wait, 2), error=str(retry.error)
                )
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.cfg.timeout_seconds, connect=min(10.0, self.cfg.timeout_seconds))

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> Completion:
        """One reply, not streamed (sent once more under the other echo rule if it refuses one)."""
        try:
            return await self._complete(self._payload(messages, tools, stream=False))
        except ProviderError as err:
            echo = self.wire.echo_after(messages, err)
            if echo is None:
                raise
        done = await self._complete(self.wire.payload(messages, tools, False, echo))
        self.wire.learn(echo)
        return done

    async def _complete(self, payload: dict[str, Any]) -> Completion:
        async def attempt() -> Completion:
            try:
                resp = await self.http.post(
                    self.url, json=payload, headers=self._headers(), timeout=self._timeout()
                )
            except httpx.TransportError as err:
                raise self._transport_error(err) from err
            if resp.status_code >= 400:
                raise self._status_error(resp.status_code, resp.content, resp.headers)
            return parse_completion(resp.content, self.cfg.model)

        result: Completion = await self._retrying(attempt)
        return result

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Stream one reply: TextChunk…, then each assembled ToolCall, then a Completion.

        Retries happen only before anything was yielded; a failure mid-answer is a ProviderError.
        A refusal naming the reasoning field is sent once more under the other echo rule.
        """
        started = False
        try:
            async for event in self._stream_retrying(self._payload(messages, tools, stream=True)):
                started = True
                yield event
            return
        except ProviderError as err:
            echo = None if started else self.wire.echo_after(messages, err)
            if echo is None:
                raise
        async for event in self._stream_retrying(self.wire.payload(messages, tools, True, echo)):
            if not started:
                started = True
                self.wire.learn(echo)
            yield event

    async def _stream_retrying(self, payload: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        for attempt in range(self.cfg.max_retries + 1):
            yielded = False
            try:
                async for event in self._stream_once(payload):
                    yielded = True
                    yield event
                return
            except _Retry as retry:
                if yielded or attempt >= self.cfg.max_retries:
                    raise retry.error from None
                wait = self._backoff(attempt, retry.wait)
                log.warning(
                    "llm_retry", attempt=attempt + 1, wait=round(wait, 2), error=str(retry.error)
                )
                await asyncio.sleep(wait)

    async def _stream_once(self, payload: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        request = self.http.build_request(
            "POST", self.url, json=payload, headers=self._headers(), timeout=self._timeout()
        )
        try:
            resp = await self.http.send(request, stream=True)
        except httpx.TransportError as err:
            raise self._transport_error(err) from err
        try:
            if resp.status_code >= 400:
                raise self._status_error(resp.status_code, await resp.aread(), resp.headers)
            if "text/event-stream" not in resp.headers.get("content-type", "text/event-stream"):
                # a server that ignored stream=true and answered with one JSON body
                done = parse_completion(await resp.aread(), self.cfg.model)
                if done.reasoning:
                    yield ReasoningChunk(done.reasoning)
                if done.text:
                    yield TextChunk(done.text)
                for call in done.tool_calls:
                    yield call
                yield done
                return
            lines = resp.aiter_lines()
            async for event in _events(sse_payloads(lines), self.cfg.model):
                if isinstance(event, Completion):
                    await _drain(lines)  # before the caller may stop iterating at the answer
                yield event
        except httpx.TransportError as err:
            raise self._transport_error(err) from err
        finally:
            await resp.aclose()


async def _events(payloads: AsyncIterator[str], model: str) -> AsyncIterator[StreamEvent]:
    assembler = ToolCallAssembler()
    think = ThinkFilter()
    text: list[str] = []
    reasoning: list[str] = []
    finish: str | None = None
    usage: dict[str, Any] | None = None
    async for data in payloads:
        if data == "[DONE]":
            break
        chunk = _json_chunk(data)
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            thought = reasoning_of(delta)
            if thought:
                reasoning.append(thought)
                yield ReasoningChunk(thought)
            content = delta.get("content")
            if isinstance(content, str) and content:
                piece = think.feed(content)
                if piece:
                    text.append(piece)
                    yield TextChunk(piece)
            assembler.feed(delta.get("tool_calls"))
            finish = choice.get("finish_reason") or finish
    tail = think.flush()
    if tail:
        text.append(tail)
        yield TextChunk(tail)
    calls = assembler.calls()
    for call in calls:
        yield call
    finish = finish or ("tool_calls" if calls else "stop")
    thought = "".join(reasoning) or think.thought
    yield Completion("".join(text), calls, finish, usage, thought, model)


async def _drain(lines: AsyncIterator[str]) -> None:
    """Read what follows `[DONE]` (normally only the body's end) so the connection is reused.

    A response closed before its last byte takes its connection with it: every model call then
    opened a new one (a TLS handshake to a real endpoint). A server that keeps talking after
    `[DONE]`, or holds the stream open, is cut off after a few lines or half a second.
    """
    try:
        async with asyncio.timeout(DRAIN_SECONDS):  # a server that holds the stream open
            for _ in range(DRAIN_LINES):
                await anext(lines)
    except (StopAsyncIteration, TimeoutError, httpx.HTTPError):
        return  # the answer is complete either way; `aclose` drops a connection left unread


def _json_chunk(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError:
        log.warning("llm_bad_chunk", data=data[:200])
        return {}
    if not isinstance(chunk, dict):
        return {}
    if chunk.get("error"):
        raise ProviderError(f"The LLM endpoint reported an error mid-stream: {chunk['error']}")
    return chunk


def parse_completion(body: bytes, model: str = "") -> Completion:
    """Parse a non-streamed Chat Completions body, tolerating missing fields."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ProviderError(
            f"The LLM endpoint sent a body that is not JSON: {body[:200]!r}"
        ) from None
    if not isinstance(data, dict):
        raise ProviderError("The LLM endpoint sent an unexpected JSON body (not an object).")
    if data.get("error"):
        raise ProviderError(f"The LLM endpoint reported an error: {_error_message(body)}")
    choices = data.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    content = message.get("content")
    text, thought = split_think(content) if isinstance(content, str) else ("", "")
    calls: list[ToolCall] = []
    for raw in message.get("tool_calls") or []:
        fn = raw.get("function") or {}
        if fn.get("name"):
            calls.append(ToolCall.from_raw(raw.get("id"), fn["name"], fn.get("arguments")))
    finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
    reasoning = reasoning_of(message) or thought
    return Completion(text, calls, finish, data.get("usage"), reasoning, model)
