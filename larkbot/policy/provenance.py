"""Who wrote what in a shared history: sender labels, and untrusted messages raising the bar.

In a Lark group every member's message lands in one session. Each stored group message keeps
its sender (`SENDER_KEY`, never sent to the model), and while another person's message is in
the history the model sees, the owner's turns count as holding untrusted text: their side
effects need an explicit approval naming that message (a member cannot steer the owner's
"cleanup" into their `rm -rf`).
"""

from __future__ import annotations

from collections.abc import Iterable

from larkbot.content_parts import Content
from larkbot.context import RequestContext
from larkbot.providers.base import Message

SENDER_KEY = "sender"


def user_message(content: Content, ctx: RequestContext) -> Message:
    """The stored user message; in group chats with its sender attached (the Lark turn input
    already starts the text with the sender's name and owner mark, `lark/turn_input.py`)."""
    if ctx.chat_type != "group":  # one person's chat: nothing to tell apart
        return {"role": "user", "content": content}
    sender = {"id": ctx.sender_id, "owner": ctx.is_owner, "name": ctx.sender_name}
    return {"role": "user", "content": content, SENDER_KEY: sender}


def untrusted_messages(history: Iterable[Message]) -> list[str]:
    """How cards name the other people's messages in `history` (one entry per person)."""
    found: dict[str, str] = {}
    for message in history:
        sender = message.get(SENDER_KEY)
        if message.get("role") == "user" and isinstance(sender, dict) and not sender.get("owner"):
            key = str(sender.get("id") or "someone")
            name = str(sender.get("name") or "")
            who = f"{name} ({key}, not an owner)" if name else f"{key} (not an owner)"
            found.setdefault(key, f"a message from {who} in this chat")
    return list(found.values())


def for_model(messages: Iterable[Message]) -> list[Message]:
    """The messages as the model gets them: provenance kept out of the wire format."""
    return [
        {k: v for k, v in m.items() if k != SENDER_KEY} if SENDER_KEY in m else m for m in messages
    ]
