"""Results only their caller sees again: in a shared (group) history, what a personal tool
(`private_to_caller`, the memory tools) returned in one person's turn is hidden from the turns
of everyone else, owners included, and from the summary everyone shares.

The model's answer in that turn stays: the person asked in front of the group.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from larkbot.policy.provenance import SENDER_KEY
from larkbot.providers.base import Message

HIDDEN_ARGUMENTS = json.dumps({"hidden": "another person's"})


def hidden_personal(tool_name: str) -> str:
    """The placeholder of another person's personal result."""
    return f"[hidden: this {tool_name} result belongs to another person]"


def hide_others_personal(
    history: list[Message], sender_id: str, personal: Callable[[str], bool]
) -> list[Message]:
    """A copy of `history` without personal calls and results of turns `sender_id` did not send.

    A turn's sender is its user message's `SENDER_KEY` (group messages carry one); a history
    without senders (one person's chat) is returned as it is.
    """
    names: dict[str, str] = {}
    others = False
    visible: list[Message] = []
    for message in history:
        role = message.get("role")
        if role == "user":
            sender = message.get(SENDER_KEY)
            others = isinstance(sender, dict) and str(sender.get("id") or "") != sender_id
        elif role == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                name = names[str(call.get("id"))] = str(function.get("name", ""))
                if others and personal(name):
                    call = {**call, "function": {**function, "arguments": HIDDEN_ARGUMENTS}}
                calls.append(call)
            message = {**message, "tool_calls": calls}
        elif role == "tool" and others:
            name = names.get(str(message.get("tool_call_id")), "")
            if personal(name):
                message = {**message, "content": hidden_personal(name)}
        visible.append(message)
    return visible
