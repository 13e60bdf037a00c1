"""Events `Agent.stream_chat` yields; every interface (chat REPL, Lark) renders these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tools.base import Attachment


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer text as the model streams it."""

    text: str


@dataclass(frozen=True)
class ToolStarted:
    """The loop is about to run a tool call (after consent)."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolFinished:
    """A tool call finished; `content` is what the model sees."""

    call_id: str
    name: str
    content: str
    is_error: bool
    elapsed: float
    arguments: dict[str, Any] | None = None  # set for a call refused before it started


@dataclass(frozen=True)
class ConsentRequested:
    """The loop is asking the consent provider before running a call."""

    call_id: str
    name: str
    description: str
    scope: str
    always: bool
    sources: tuple[str, ...] = ()  # untrusted content that raised the bar


@dataclass(frozen=True)
class UiPayload:
    """A structured UI payload from a tool (`ToolResult.ui`), e.g. {"lark_card": {...}}."""

    ui: dict[str, Any]


@dataclass(frozen=True)
class AttachmentReady:
    """A tool produced a file for the user (`ToolResult.attachments`); the channel delivers it."""

    call_id: str
    tool: str
    attachment: Attachment


@dataclass(frozen=True)
class ThinkingDelta:
    """A piece of the model's chain of thought, for a collapsible "thinking" panel.

    Only yielded where `llm.show_thinking` allows it (never in groups unless "always"); it is
    never part of the answer.
    """

    text: str


@dataclass(frozen=True)
class TokenCount:
    """Tokens a turn's model calls used (reasoning is part of completion, cached of prompt)."""

    model: str
    prompt: int = 0
    completion: int = 0
    reasoning: int = 0
    cached: int = 0


@dataclass(frozen=True)
class FinalAnswer:
    """The turn's final answer text."""

    text: str
    ui: list[dict[str, Any]] = field(default_factory=list)
    usage: TokenCount | None = None  # None where no model was asked (a command's answer)


@dataclass(frozen=True)
class ErrorEvent:
    """The turn failed; `message` is safe to show the user."""

    message: str


AgentEvent = (
    TextDelta
    | ThinkingDelta
    | ToolStarted
    | ToolFinished
    | ConsentRequested
    | UiPayload
    | AttachmentReady
    | FinalAnswer
    | ErrorEvent
)
