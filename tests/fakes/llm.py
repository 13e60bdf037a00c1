"""FakeLLM: a scripted OpenAI-compatible Chat Completions server on 127.0.0.1 (aiohttp).

    async with FakeLLM() as llm:
        llm.reply_tools(("shell", {"command": "ls"}), args_chunk=3)
        llm.reply_text("done")
        # point llm.base_url (ends in /v1) at the code under test; inspect llm.requests

Each request to /v1/chat/completions takes the next scripted Reply (streamed as SSE when the
request says `stream: true`, else one JSON body). When the script is empty, `responder(body)`
is asked if set, else a short fixed text is returned. /v1/models lists `models`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

EXHAUSTED = "(FakeLLM: no scripted reply left)"
DEFAULT_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass
class FakeToolCall:
    """A tool call to send; `arguments` as a dict (JSON-encoded) or a raw string (may be broken)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # None: generated; "" : omitted from the wire

    def raw_arguments(self) -> str:
        """The arguments string as sent."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass
class Reply:
    """One scripted model reply and how to deliver it."""

    text: str = ""
    tool_calls: list[FakeToolCall] = field(default_factory=list)
    delay: float = 0.0  # seconds before answering
    status: int = 200  # >= 400: an error response with `error_message`
    error_message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"Retry-After": "0"}
    text_chunk: int = 4  # characters of text per SSE chunk
    args_chunk: int = 0  # characters of arguments per chunk (0: whole arguments at once)
    interleave: bool = False  # alternate the argument fragments of several calls
    byte_chunk: int = 0  # write the SSE body in pieces of this many bytes (splits UTF-8)
    reasoning: str = ""  # sent as `reasoning_content` deltas before the text
    reasoning_field: str = "reasoning_content"  # vLLM and Ollama say "reasoning"
    finish_reason: str | None = None  # override (Ollama-like servers say "stop" after tool calls)
    calls_in_one_delta: bool = False  # every tool call whole in one delta (Ollama-like)
    omit_index: bool = False
    omit_finish_reason: bool = False
    usage_chunk: bool = True  # a final chunk with empty `choices` and usage (OpenAI style)
    usage: dict[str, Any] | None = None  # the usage object sent (default: 10 + 5 tokens)
    stream_error: int = 0  # cut the connection after this many chunks (True: the first)
    hold_open: float = 0.0  # seconds the stream stays open after `[DONE]` before it ends
    # streamed: the content and tool-call chunks go out, the ending (finish_reason, usage,
    # `[DONE]`) only once this is set, so a test decides when the reply is over
    gate: asyncio.Event | None = None


def _call_wire(call: FakeToolCall, index: int, args: str, head: bool) -> dict[str, Any]:
    wire: dict[str, Any] = {"index": index}
    if head:
        if call.id != "":
            wire["id"] = call.id
        wire["type"] = "function"
        wire["function"] = {"name": call.name, "arguments": args}
    else:
        wire["function"] = {"arguments": args}
    return wire


def _pieces(text: str, size: int) -> list[str]:
    if size <= 0 or not text:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


class FakeLLM:
    """The fake server; see the module docstring."""

    def __init__(
        self, models: list[str] | None = None, api_key: str | None = None, port: int = 0
    ) -> None:
        self.script: list[Reply] = []
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        # a provider's request rules: returns why a body is refused (answered 400), else None
        self.validate: Callable[[dict[str, Any]], str | None] | None = None
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.connections: set[tuple[str, int]] = set()  # client (host, port) of each request
        self.models = models if models is not None else ["gpt-4o-mini", "fake-model"]
        self.api_key = api_key  # when set, other keys get 401
        self.models_status = 200
        self.transcript = "transcribed speech"  # what /v1/audio/transcriptions answers
        self.transcriptions: list[dict[str, Any]] = []  # model, file name, byte count
        self._runner: web.AppRunner | None = None
        self.port = port  # 0: any free port

    # -- scripting ---------------------------------------------------------------------------

    def add(self, *replies: Reply) -> FakeLLM:
        """Queue replies."""
        self.script.extend(replies)
        return self

    def reply_text(self, text: str, **kw: Any) -> FakeLLM:
        """Queue a plain text answer."""
        return self.add(Reply(text=text, **kw))

    def reply_tools(self, *calls: FakeToolCall | tuple[str, Any], **kw: Any) -> FakeLLM:
        """Queue a reply asking for tool calls: FakeToolCall or (name, arguments) pairs."""
        made = [c if isinstance(c, FakeToolCall) else FakeToolCall(c[0], c[1]) for c in calls]
        for c in made:
            if c.id is None:
                c.id = f"call_{uuid.uuid4().hex[:12]}"
        return self.add(Reply(tool_calls=made, **kw))

    def reply_error(self, status: int, message: str = "scripted error", **kw: Any) -> FakeLLM:
        """Queue an HTTP error."""
        return self.add(Reply(status=status, error_message=message, **kw))

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- server ------------------------------------------------------------------------------

    async def __aenter__(self) -> FakeLLM:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _authorised(self, request: web.Request) -> bool:
        return self.api_key is None or request.headers.get("Authorization") == (
            f"Bearer {self.api_key}"
        )

    async def _models(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
        if self.models_status != 200:
            return web.json_response({"error": {"message": "no"}}, status=self.models_status)
        data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _transcribe(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
        form = await request.post()
        upload = form.get("file")
        if not hasattr(upload, "file") or not form.get("model"):
            return web.json_response({"error": {"message": "file and model required"}}, status=400)
        data = upload.file.read()  # type: ignore[union-attr]
        name = upload.filename  # type: ignore[union-attr]
        self.transcriptions.append({"model": form["model"], "file": name, "bytes": len(data)})
        return web.json_response({"text": self.transcript})

    def _next(self, body: dict[str, Any]) -> Reply:
        if self.script:
            return self.script.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return Reply(text=EXHAUSTED)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if request.transport is not None:
            self.connections.add(request.transport.get_extra_info("peername")[:2])
        self.headers.append(dict(request.headers))
        if not self._authorised(request):
            return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
        problem = self.validate(body) if self.validate else None
        if problem:
            err = {"error": {"message": problem, "type": "invalid_request_error"}}
            return web.json_response(err, status=400)
        reply = self._next(body)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status >= 400:
            err = {"error": {"message": reply.error_message, "type": "fake"}}
            return web.json_response(err, status=reply.status, headers=reply.headers)
        if body.get("stream"):
            return await self._stream(request, reply, body.get("model", ""))
        return web.json_response(_whole(reply, body.get("model", "")))

    async def _stream(self, request: web.Request, reply: Reply, model: str) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        content = _sse(_content_chunks(reply, model))
        ending = [*_sse(_ending_chunks(reply, model)), b"data: [DONE]\n\n"]
        events = content + ending
        if reply.stream_error:
            for piece in events[: int(reply.stream_error)]:
                await resp.write(piece)
            assert request.transport is not None
            request.transport.close()
            return resp
        if reply.gate is not None:  # the content now, the ending once the test says so
            await _write(resp, content, reply.byte_chunk)
            await reply.gate.wait()
            events = ending
        await _write(resp, events, reply.byte_chunk)
        if reply.hold_open:
            await asyncio.sleep(reply.hold_open)
        await resp.write_eof()
        return resp


async def _write(resp: web.StreamResponse, events: list[bytes], byte_chunk: int) -> None:
    """Write SSE events, or (byte_chunk > 0) their bytes in pieces of that size."""
    if byte_chunk:
        blob = b"".join(events)
        events = [blob[i : i + byte_chunk] for i in range(0, len(blob), byte_chunk)]
    for piece in events:
        await resp.write(piece)


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _tool_chunks(reply: Reply) -> list[dict[str, Any]]:
    deltas: list[list[dict[str, Any]]] = []
    for i, call in enumerate(reply.tool_calls):
        parts = _pieces(call.raw_arguments(), reply.args_chunk)
        per_call = [_call_wire(call, i, parts[0], head=True)]
        per_call += [_call_wire(call, i, p, head=False) for p in parts[1:]]
        deltas.append(per_call)
    if reply.interleave:
        ordered = [d for round_ in _zip_longest(deltas) for d in round_]
    else:
        ordered = [d for per_call in deltas for d in per_call]
    if reply.omit_index:
        for d in ordered:
            d.pop("index", None)
    if reply.calls_in_one_delta and ordered:
        return [{"content": "", "tool_calls": ordered}]
    return [{"tool_calls": [d]} for d in ordered]


def _zip_longest(lists: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    longest = max((len(x) for x in lists), default=0)
    return [[x[i] for x in lists if i < len(x)] for i in range(longest)]


def _sse(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks]


def _content_chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    out = [_chunk(model, {"role": "assistant", "content": ""})]
    field_name = reply.reasoning_field
    out += [_chunk(model, {field_name: p}) for p in _pieces(reply.reasoning, 8) if p]
    out += [_chunk(model, {"content": p}) for p in _pieces(reply.text, reply.text_chunk) if p]
    out += [_chunk(model, d) for d in _tool_chunks(reply)]
    return out


def _ending_chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    """The finish_reason chunk and the usage chunk, each unless the reply leaves it out."""
    out = []
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    if not reply.omit_finish_reason:
        out.append(_chunk(model, {}, finish))
    if reply.usage_chunk:
        usage = reply.usage or DEFAULT_USAGE
        out.append(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": usage,
            }
        )
    return out


def _whole(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message[reply.reasoning_field] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                **({"id": c.id} if c.id != "" else {}),
                "type": "function",
                "function": {"name": c.name, "arguments": c.raw_arguments()},
            }
            for c in reply.tool_calls
        ]
    choice: dict[str, Any] = {"index": 0, "message": message}
    if not reply.omit_finish_reason:
        choice["finish_reason"] = reply.finish_reason or (
            "tool_calls" if reply.tool_calls else "stop"
        )
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": reply.usage or DEFAULT_USAGE,
    }
