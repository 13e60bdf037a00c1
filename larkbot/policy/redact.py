"""What a sender may see of a shared history: results of tools they may not use are hidden.

A Lark group is one session, so the owner's `file_read` or calendar results stay in the history
the model sees on the next turn — whoever sends it. For a sender the policy does not let use a
tool, its stored results are replaced by a placeholder, and so are the arguments of the calls
that follow a hidden result in the same turn (they may quote it) and of the hidden calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from larkbot.policy.provenance import SENDER_KEY
from larkbot.providers.base import Message

HIDDEN_ARGUMENTS = json.dumps({"hidden": "private to the bot's owner"})
ANOTHER_PERSONS = (
    "[hidden: this {tool} result was read with another person's own Lark access; "
    "call it again to read it with yours]"
)


def hidden_result(tool_name: str) -> str:
    """The placeholder a hidden tool result is replaced with."""
    return f"[hidden: this {tool_name or 'tool'} result is private to the bot's owner]"


def _hide_arguments(message: Message, everything: bool, may_see: Callable[[str], bool]) -> Message:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        if everything or not may_see(str(function.get("name", ""))):
            call = {**call, "function": {**function, "arguments": HIDDEN_ARGUMENTS}}
        calls.append(call)
    return {**message, "tool_calls": calls}


def hide_private_results(
    history: list[Message],
    may_see: Callable[[str], bool],
    as_asker: Callable[[str], bool] = lambda name: False,
    sender: str = "",
) -> list[Message]:
    """A copy of `history` with what `may_see(tool_name)` forbids replaced by placeholders.

    Results of `as_asker(tool_name)` tools were read with the access of the person whose turn
    it was (their own documents): in a shared history only that person (`sender`) sees them.
    """
    names: dict[str, str] = {}
    tainted = False  # a hidden result earlier in this turn: later arguments may quote it
    visible: list[Message] = []
    turn_of = ""  # whose turn this is, in a group history (the stored sender)
    for message in history:
        role = message.get("role")
        if role == "user":
            tainted = False
            who = message.get(SENDER_KEY)
            turn_of = str(who.get("id") or "") if isinstance(who, dict) else ""
        elif role == "assistant" and message.get("tool_calls"):
            for call in message.get("tool_calls") or []:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
            message = _hide_arguments(message, tainted, may_see)
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "")
            if not may_see(name):
                message = {**message, "content": hidden_result(name)}
                tainted = True
            elif turn_of and turn_of != sender and as_asker(name):
                message = {**message, "content": ANOTHER_PERSONS.format(tool=name)}
                tainted = True
        visible.append(message)
    return visible
