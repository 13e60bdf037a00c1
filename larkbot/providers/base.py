"""What a chat-model provider yields: text pieces, assembled tool calls, a completion."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]


def new_call_id() -> str:
    """A tool-call id for providers that omit one."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for; `parse_error` is set when its arguments were not JSON."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    parse_error: str | None = None

    @classmethod
    def from_raw(cls, call_id: str | None, name: str, raw: str | dict[str, Any] | None) -> ToolCall:
        """Build from the wire form, where arguments are a JSON string (or, for some, an object)."""
        cid = call_id or new_call_id()
        if isinstance(raw, dict):
            return cls(cid, name, raw)
        text = (raw or "").strip()
        if not text:
            return cls(cid, name, {})
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            return cls(cid, name, {}, f"arguments are not valid JSON ({err.msg} at char {err.pos})")
        if not isinstance(value, dict):
            return cls(cid, name, {}, "arguments must be a JSON object")
        return cls(cid, name, value)

    def to_wire(self) -> dict[str, Any]:
        """This call as an entry of an assistant message's `tool_calls`."""
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": json.dumps(self.arguments, ensure_ascii=False),
            },
        }


@dataclass(frozen=True)
class TextChunk:
    """A piece of answer text, as streamed."""

    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    """A piece of the model's chain of thought, as streamed (never part of the answer)."""

    text: str


@dataclass(frozen=True)
class Completion:
    """A whole model reply: text, tool calls, why it stopped, its reasoning and token usage."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    reasoning: str = ""  # the chain of thought (reasoning_content / reasoning / <think>)
    model: str = ""  # the model that answered (a fallback's, after a switch)


StreamEvent = TextChunk | ReasoningChunk | ToolCall | Completion
"""`stream()` yields Text/ReasoningChunks as they arrive, then each ToolCall, then a Completion."""


class ChatProvider(Protocol):
    """A chat model the agent loop can talk to."""

    def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Stream one reply: TextChunk…, ToolCall…, then a Completion."""
        ...

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> Completion:
        """One reply, not streamed."""
        ...
