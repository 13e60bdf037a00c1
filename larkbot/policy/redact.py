"""What a sender may see of a shared history: other people's results are hidden.

A Lark group is one session, so the owner's `file_read` or calendar results stay in the history
the model sees on the next turn — whoever sends it. One walk over the history hides:

- results of tools the policy does not let this sender use (`may_see`), and the arguments of
  those calls and of the calls that follow a hidden result in the same turn (they may quote it);
- results read with another person's own Lark access (`as_asker` tools in their turn): only that
  person sees them again;
- what a personal tool (`private_to_caller`, the memory tools) returned in another person's
  turn, and its arguments: hidden from everyone else, owners included, and from the summary
  everyone shares. The model's answer in that turn stays: the person asked in front of the group.

A turn's sender is its user message's `SENDER_KEY` (group messages carry one); a history without
senders (one person's chat) hides only what `may_see` forbids.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from larkbot.policy.provenance import SENDER_KEY
from larkbot.providers.base import Message

HIDDEN_ARGUMENTS = json.dumps({"hidden": "private to the bot's owner"})
PERSONAL_ARGUMENTS = json.dumps({"hidden": "another person's"})
ANOTHER_PERSONS = (
    "[hidden: this {tool} result was read with another person's own Lark access; "
    "call it again to read it with yours]"
)


def _never(name: str) -> bool:
    return False


def hidden_result(tool_name: str) -> str:
    """The placeholder a hidden tool result is replaced with."""
    return f"[hidden: this {tool_name or 'tool'} result is private to the bot's owner]"


def hidden_personal(tool_name: str) -> str:
    """The placeholder of another person's personal result."""
    return f"[hidden: this {tool_name} result belongs to another person]"


def _hide_arguments(
    message: Message,
    everything: bool,
    may_see: Callable[[str], bool],
    theirs: Callable[[str], bool],
) -> Message:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        if theirs(name):
            call = {**call, "function": {**function, "arguments": PERSONAL_ARGUMENTS}}
        elif everything or not may_see(name):
            call = {**call, "function": {**function, "arguments": HIDDEN_ARGUMENTS}}
        calls.append(call)
    return {**message, "tool_calls": calls}


def hide_private_results(
    history: list[Message],
    may_see: Callable[[str], bool],
    as_asker: Callable[[str], bool] = _never,
    sender: str = "",
    personal: Callable[[str], bool] = _never,
) -> list[Message]:
    """A copy of `history` with what `sender` may not see replaced by placeholders.

    `may_see(tool_name)`: the policy. In turns others sent, results of `as_asker` tools (read
    with the asker's own access) and calls and results of `personal` tools are theirs alone.
    """
    names: dict[str, str] = {}
    tainted = False  # a hidden result earlier in this turn: later arguments may quote it
    others = False  # this turn was sent (in a group) by someone other than `sender`
    visible: list[Message] = []
    for message in history:
        role = message.get("role")
        if role == "user":
            tainted = False
            who = message.get(SENDER_KEY)
            others = isinstance(who, dict) and str(who.get("id") or "") != sender
        elif role == "assistant" and message.get("tool_calls"):
            for call in message.get("tool_calls") or []:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
            message = _hide_arguments(message, tainted, may_see, personal if others else _never)
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "")
            content = None
            if not may_see(name):
                content, tainted = hidden_result(name), True
            elif others and as_asker(name):
                content, tainted = ANOTHER_PERSONS.format(tool=name), True
            if others and personal(name):  # another member's memory: say whose, not why
                content = hidden_personal(name)
            if content is not None:
                message = {**message, "content": content}
        visible.append(message)
    return visible
