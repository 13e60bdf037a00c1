"""What one model round leaves in the history: its tool calls, their results, its thinking."""

from __future__ import annotations

from collections.abc import Sequence

from larkbot.providers.base import Completion, Message, ToolCall, new_call_id
from larkbot.providers.wire import REASONING_KEY
from tools.base import ToolResult
from tools.executor import for_model


def with_reasoning(message: Message, completion: Completion) -> Message:
    """Keep the chain of thought on the stored message (the provider decides if it goes back)."""
    if completion.reasoning:
        message[REASONING_KEY] = completion.reasoning
    return message


def tool_round(
    completion: Completion, calls: Sequence[ToolCall], results: dict[str, ToolResult]
) -> list[Message]:
    """The assistant's tool-call message followed by one result message per call."""
    assistant: Message = {
        "role": "assistant",
        "content": completion.text or None,
        "tool_calls": [c.to_wire() for c in calls],
    }
    with_reasoning(assistant, completion)
    return [
        assistant,
        *(
            {"role": "tool", "tool_call_id": c.id, "content": for_model(results[c.id])}
            for c in calls
        ),
    ]


def unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Give calls that share an id (some providers reuse them) a fresh one."""
    seen: set[str] = set()
    out: list[ToolCall] = []
    for call in calls:
        if call.id in seen:
            call = ToolCall(new_call_id(), call.name, call.arguments, call.parse_error)
        seen.add(call.id)
        out.append(call)
    return out
