"""Agent events → AG-UI 1.0 events (the `ag-ui-protocol` package's types), for one run.

Text deltas open a TEXT_MESSAGE when none is open and any other event closes it, so the stream
reads START, CONTENT…, END around each stretch of text. Tool calls become START/ARGS/END when
they start and RESULT when they finish (a refused call, which never starts, gets all four, its
ARGS the arguments the model sent: `{}` when they were not a JSON object). A stopped turn ends
with RUN_FINISHED and the cancelled outcome; a finished one carries the turn's token usage.
ui_card's A2UI payload becomes CUSTOM `a2ui`; a Lark card payload is not sent on the web.
Thinking (ThinkingDelta, only where `llm.show_thinking` allows) opens a REASONING span the same
way: REASONING_START, REASONING_MESSAGE_START, CONTENT…, then both ENDs before anything else.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from larkbot.events import (
    AgentEvent,
    AttachmentReady,
    ErrorEvent,
    FinalAnswer,
    TextDelta,
    ThinkingDelta,
    TokenCount,
    ToolFinished,
    ToolStarted,
    UiPayload,
)
from tools.base import Attachment

PROTOCOL_VERSION = "1.0"


def encode(event: BaseEvent) -> str:
    """The event's JSON as AG-UI puts it on the wire (camelCase, no null optionals)."""
    return event.model_dump_json(by_alias=True)


def _now_ms() -> int:
    return int(time.time() * 1000)


def token_usage(count: TokenCount) -> TokenUsage:
    """RUN_FINISHED's usage entry for the turn's model (zero breakdowns left out)."""
    return TokenUsage(
        model=count.model,
        input_tokens=count.prompt,
        output_tokens=count.completion,
        total_tokens=count.prompt + count.completion,
        reasoning_tokens=count.reasoning or None,
        cached_input_tokens=count.cached or None,
    )


class RunTranslator:
    """Keeps the open text message and the started tool calls of one run."""

    def __init__(
        self, thread_id: str, run_id: str, file_url: Callable[[Attachment], str] | None = None
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.file_url = file_url
        self.message_id: str | None = None
        self.reasoning_id: str | None = None
        self.started: set[str] = set()

    def started_event(self) -> list[BaseEvent]:
        """RUN_STARTED."""
        return [
            RunStartedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                protocol_version=PROTOCOL_VERSION,
                timestamp=_now_ms(),
            )
        ]

    def close_text(self) -> list[BaseEvent]:
        """The ENDs of the open text message and reasoning span, if any."""
        out: list[BaseEvent] = []
        if self.reasoning_id is not None:
            rid, self.reasoning_id = self.reasoning_id, None
            out += [ReasoningMessageEndEvent(message_id=rid), ReasoningEndEvent(message_id=rid)]
        if self.message_id is not None:
            out.append(TextMessageEndEvent(message_id=self.message_id))
            self.message_id = None
        return out

    def _thinking(self, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self.reasoning_id is None:
            out = self.close_text()
            self.reasoning_id = rid = f"think_{uuid.uuid4().hex[:16]}"
            out += [ReasoningStartEvent(message_id=rid), ReasoningMessageStartEvent(message_id=rid)]
        return [*out, ReasoningMessageContentEvent(message_id=self.reasoning_id, delta=text)]

    def custom(self, name: str, value: Any) -> list[BaseEvent]:
        """A CUSTOM event (after closing any open text)."""
        return [*self.close_text(), CustomEvent(name=name, value=value, timestamp=_now_ms())]

    def cancelled(self) -> list[BaseEvent]:
        """RUN_FINISHED with the cancelled outcome: the turn was stopped, it did not fail."""
        outcome = RunFinishedCancelledOutcome()
        finished = RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, timestamp=_now_ms()
        )
        return [*self.close_text(), finished]

    def error(self, message: str) -> list[BaseEvent]:
        """RUN_ERROR (a stopped turn is no error: `cancelled`)."""
        return [
            *self.close_text(),
            RunErrorEvent(message=message, code="error", timestamp=_now_ms()),
        ]

    def translate(self, event: AgentEvent) -> list[BaseEvent]:
        """The AG-UI events for one agent event (possibly none)."""
        if isinstance(event, ThinkingDelta):
            return self._thinking(event.text)
        if isinstance(event, TextDelta):
            out: list[BaseEvent] = self.close_text() if self.reasoning_id else []
            if self.message_id is None:
                self.message_id = f"msg_{uuid.uuid4().hex[:16]}"
                out.append(TextMessageStartEvent(message_id=self.message_id, role="assistant"))
            out.append(TextMessageContentEvent(message_id=self.message_id, delta=event.text))
            return out
        if isinstance(event, ToolStarted):
            return [*self.close_text(), *self._call(event.call_id, event.name, event.arguments)]
        if isinstance(event, ToolFinished):
            out = self.close_text()
            if event.call_id not in self.started:  # refused before it started
                out += self._call(event.call_id, event.name, event.arguments or {})
            result = ToolCallResultEvent(
                message_id=f"tool_{event.call_id}",
                tool_call_id=event.call_id,
                content=event.content,
                role="tool",
                metadata={"isError": event.is_error, "elapsed": round(event.elapsed, 3)},
            )
            return [*out, result]
        if isinstance(event, UiPayload):
            a2ui = event.ui.get("a2ui")
            if isinstance(a2ui, dict):
                return self.custom("a2ui", {"messages": a2ui.get("messages", [])})
            return []
        if isinstance(event, AttachmentReady):
            att = event.attachment
            name = os.path.basename(att.path)
            value = {"tool": event.tool, "name": name, "kind": att.kind, "mime": att.mime}
            url = self.file_url(att) if self.file_url is not None else ""
            return self.custom("attachment", {**value, "caption": att.caption, "url": url})
        if isinstance(event, FinalAnswer):
            usage = [token_usage(event.usage)] if event.usage else None
            finished = RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, usage=usage, timestamp=_now_ms()
            )
            return [*self.close_text(), finished]
        if isinstance(event, ErrorEvent):
            return self.error(event.message)
        return []  # ConsentRequested: the consent provider sends the consent_request itself

    def _call(self, call_id: str, name: str, arguments: dict[str, Any]) -> list[BaseEvent]:
        self.started.add(call_id)
        args = json.dumps(arguments, ensure_ascii=False)
        return [
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name),
            ToolCallArgsEvent(tool_call_id=call_id, delta=args),
            ToolCallEndEvent(tool_call_id=call_id),
        ]
