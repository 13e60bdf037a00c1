"""Who wrote what in a shared history: sender labels, and untrusted messages raising the bar.

In a Lark group every member's message lands in one session. Each stored user message keeps
its sender (`SENDER_KEY`, never sent to the model), group messages carry a visible label so
the model can tell the owner from everyone else, and while another person's message is in
the history the model sees, the owner's turns count as holding untrusted text: their side
effects need an explicit approval naming that message (a member cannot steer the owner's
"cleanup" into their `rm -rf`).
"""

from __future__ import annotations

from collections.abc import Iterable

from larkbot.context import RequestContext
from larkbot.providers.base import Message

SENDER_KEY = "sender"


def _who(ctx: RequestContext) -> str:
    return ctx.sender_name or ctx.sender_id or "someone"


def user_message(text: str, ctx: RequestContext) -> Message:
    """The stored user message; in group chats labelled with its sender, provenance attached."""
    if ctx.chat_type != "group":  # one person's chat: nothing to tell apart
        return {"role": "user", "content": text}
    role = "owner" if ctx.is_owner else "not an owner"
    sender = {"id": ctx.sender_id, "owner": ctx.is_owner, "name": ctx.sender_name}
    return {"role": "user", "content": f"[{_who(ctx)} ({role})]: {text}", SENDER_KEY: sender}


def untrusted_messages(history: Iterable[Message]) -> list[str]:
    """How cards name the other people's messages in `history` (one entry per person)."""
    found: dict[str, str] = {}
    for message in history:
        sender = message.get(SENDER_KEY)
        if message.get("role") == "user" and isinstance(sender, dict) and not sender.get("owner"):
            key = str(sender.get("id") or "")
            found.setdefault(key, f"a message from {sender.get('name') or key or 'someone'}")
    return [f"{label} (not an owner) in this chat" for label in found.values()]


def for_model(messages: Iterable[Message]) -> list[Message]:
    """The messages as the model gets them: provenance kept out of the wire format."""
    return [
        {k: v for k, v in m.items() if k != SENDER_KEY} if SENDER_KEY in m else m for m in messages
    ]
