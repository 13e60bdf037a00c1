"""Provenance: who wrote each piece of text the model sees, and the bar that text raises.

Text no owner wrote (another person's message, a quote or forward of one, a document, a web
page, a downloaded file, a network command's output, a memory of such a turn) may try to
steer the model. While any of it is in the context sent to the model (the whole history
window, earlier turns included), every side effect needs an explicit owner approval whose
card names where that text came from (`larkbot.policy.rules`); `/new` starts clean.

The API, for every part that puts text in front of the model:

- `Source(kind, label)`: one piece of untrusted text. `kind` is a `Kind`; `label` is how an
  approval card names it, a phrase such as "the document q3.docx sent in this chat".
- Messages keep their sources in the stored history under `PROVENANCE_KEY` (like
  `SENDER_KEY`, never sent to the model: `for_model`). `mark(message, *sources)` returns the
  message with them; `sources_of(message)` reads them back.
- An interface marks untrusted parts of the user's turn (a quoted message of someone else,
  a merge-forward, an attached document) with `ctx.with_input_sources(*sources)`;
  `user_message` stores them with the user message (`larkbot.lark.turns.turn_input` does this).
- A tool declares its result's provenance per call with `ToolResult(sources=...)` (file_read
  of a downloaded file, shell output of a network command); an `untrusted_output` tool's
  result without them gets one `Source(tool.untrusted_kind, "<tool> <argument> …")`.
  `mark_results` stores them on the round's tool messages.
- Recalled memories and workspace documents: put `mark(message, Source(Kind.MEMORY, ...))`
  (or `Kind.DOCUMENT`) on the message that carries the text, or add the source to the
  turn's input with `ctx.with_input_sources(...)`. A memory saved from a turn whose
  `ctx.untrusted` was not empty is itself untrusted when recalled (`Kind.MEMORY`), whether
  into the prompt or by memory_search (its result's `sources`).
- The bar: `untrusted_labels(messages)` names everything untrusted in `messages`; the agent
  puts those labels in `ctx.untrusted` before the first model round and adds each round's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from larkbot.content_parts import Content
from larkbot.providers.base import Message
from larkbot.sources import Kind, Source

SENDER_KEY = "sender"
PROVENANCE_KEY = "provenance"
HIDDEN_KEYS = (SENDER_KEY, PROVENANCE_KEY)


class Speaker(Protocol):
    """What `user_message` reads of a request context (`larkbot.context.RequestContext`)."""

    @property
    def chat_type(self) -> str:
        """ "group" for a shared chat."""

    @property
    def sender_id(self) -> str:
        """Who sent the message."""

    @property
    def is_owner(self) -> bool:
        """Whether they are an owner."""

    @property
    def sender_name(self) -> str:
        """Their display name."""

    @property
    def input_sources(self) -> tuple[Source, ...]:
        """The untrusted parts of their message."""


def mark(message: Message, *sources: Source) -> Message:
    """`message` with `sources` added to its provenance (a new dict; trusted ones skipped)."""
    new = [s.to_json() for s in sources if not s.trusted]
    if not new:
        return message
    known = list(message.get(PROVENANCE_KEY) or [])
    return {**message, PROVENANCE_KEY: known + [s for s in new if s not in known]}


def sources_of(message: Message) -> list[Source]:
    """The untrusted sources stored with `message` (its marks and a non-owner sender)."""
    found = [Source.from_json(raw) for raw in message.get(PROVENANCE_KEY) or []]
    sender = message.get(SENDER_KEY)
    if message.get("role") == "user" and isinstance(sender, dict) and not sender.get("owner"):
        key = str(sender.get("id") or "someone")
        name = str(sender.get("name") or "")
        who = f"{name} ({key}, not an owner)" if name else f"{key} (not an owner)"
        found.append(Source(Kind.PERSON, f"a message from {who} in this chat"))
    return [s for s in found if s is not None and not s.trusted]


def user_message(content: Content, ctx: Speaker) -> Message:
    """The stored user message: in group chats with its sender (the Lark turn input already
    starts the text with the sender's name and owner mark, `lark/turns/turn_input.py`), and with the
    untrusted parts the interface marked (`ctx.input_sources`)."""
    message: Message = {"role": "user", "content": content}
    if ctx.chat_type == "group":  # one person's chat needs no sender: nothing to tell apart
        sender = {"id": ctx.sender_id, "owner": ctx.is_owner, "name": ctx.sender_name}
        message[SENDER_KEY] = sender
    return mark(message, *ctx.input_sources)


def foreign_labels(labels: Iterable[str], ctx: Speaker) -> list[str]:
    """`labels` less the speaker's own message: what, in their turn, someone else wrote (a
    member's memory about themselves is theirs, not untrusted text they read)."""
    own = {s.label for s in sources_of(user_message("", ctx)) if s.kind is Kind.PERSON}
    return [label for label in labels if label not in own]


def untrusted_labels(history: Iterable[Message]) -> list[str]:
    """How cards name every untrusted piece of text in `history`, oldest first, once each."""
    found: dict[str, None] = {}
    for message in history:
        for source in sources_of(message):
            found.setdefault(source.label)
    return list(found)


def mark_results(messages: list[Message], sources: Mapping[str, tuple[Source, ...]]) -> None:
    """Store each tool result's sources on its tool message (`tool_call_id`), in place."""
    for i, message in enumerate(messages):
        found = sources.get(str(message.get("tool_call_id") or ""))
        if message.get("role") == "tool" and found:
            messages[i] = mark(message, *found)


def for_model(messages: Iterable[Message]) -> list[Message]:
    """The messages as the model gets them: provenance kept out of the wire format."""
    return [
        {k: v for k, v in m.items() if k not in HIDDEN_KEYS}
        if any(k in m for k in HIDDEN_KEYS)
        else m
        for m in messages
    ]
