"""How one Lark turn is shown: the `TurnView` protocol and the plain reply-at-the-end view."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from cards.lark_thinking import thinking_card
from larkbot.context import RequestContext
from larkbot.events import AgentEvent, AttachmentReady, FinalAnswer, ThinkingDelta, UiPayload
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.render import answer_messages, reply_uuid, text_content
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.attachments import ReplyTarget, deliver_all
from tools.base import Attachment

TOOK_TOO_LONG = "it took too long."  # the reason shown when a turn ran out of time


def sorry(reason: str) -> str:
    """The apology every failed answer starts with, chat or document comment."""
    return f"Sorry, I could not answer that: {reason}"


class TurnView(Protocol):
    """One per Lark turn: sees the agent's events, then delivers the answer or the failure."""

    async def on_event(self, event: AgentEvent) -> None:
        """An event of the running turn (text deltas, tool progress, UI payloads)."""
        ...

    async def finish(self, answer: FinalAnswer) -> None:
        """Deliver the final answer; returns once it is posted."""
        ...

    async def fail(self, message: str) -> None:
        """Tell the user briefly that the turn failed."""
        ...

    def abandon(self) -> None:
        """The turn was cancelled or lost its claim: stop anything still updating a card."""
        ...


ViewFactory = Callable[[InboundMessage, RequestContext], TurnView]


def lark_cards(ui: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Lark cards among UI payloads (`{"lark_card": {...}}` or `{"lark_cards": [...]}`)."""
    from cards import lark_cards_of  # ui_card splits oversized cards into "lark_cards"

    return [card for u in ui for card in lark_cards_of(u)]


def reply_target(message: InboundMessage) -> ReplyTarget:
    """Replies to the user's message, inside its topic when it is in one."""
    return ReplyTarget(message.message_id, bool(message.thread_id), message.chat_id)


class PlainReplyView:
    """Replies once at the end: markdown as a card, plain text as text, long answers split.

    Every reply carries a `uuid` derived from the inbound message id and the part, so a
    retried or re-run turn cannot post the same part twice (Lark dedups uuids for 1 h).
    Files and images tools produced (`AttachmentReady`) follow the answer, one message each.
    """

    def __init__(self, client: LarkClient, message: InboundMessage) -> None:
        self.client = client
        self.message = message
        self.sent: list[str] = []
        self.attachments: list[Attachment] = []
        self.thinking = ""  # ThinkingDelta text (only sent where llm.show_thinking allows)
        self._ui: list[dict[str, Any]] = []

    async def _reply(self, msg_type: str, content: dict[str, Any], part: str) -> None:
        message_id = await self.client.reply(
            self.message.message_id,
            msg_type,
            content,
            uuid=reply_uuid(self.message.message_id, part),
            reply_in_thread=bool(self.message.thread_id),
            chat_id=self.message.chat_id,
        )
        self.sent.append(message_id)

    async def on_event(self, event: AgentEvent) -> None:
        """Collect UI payloads and attachments; everything else shows only in the answer."""
        if isinstance(event, UiPayload):
            self._ui.append(event.ui)
        elif isinstance(event, AttachmentReady):
            self.attachments.append(event.attachment)
        elif isinstance(event, ThinkingDelta) and len(self.thinking) < 100_000:
            self.thinking += event.text

    async def deliver_thinking(self) -> None:
        """Post the chain of thought as a collapsed panel, when the turn showed one."""
        thought, self.thinking = self.thinking, ""
        if thought.strip():
            await self._reply("interactive", thinking_card(thought), "think")

    async def deliver_attachments(self) -> None:
        """Post the collected attachments (each failure becomes a one-line notice)."""
        pending, self.attachments = self.attachments, []
        if pending:
            base = reply_uuid(self.message.message_id, "att")
            await deliver_all(self.client, pending, reply_target(self.message), base)

    async def send_text(self, text: str, part: str = "a") -> None:
        """Post `text` as one or more replies (budgeted cards when it is markdown)."""
        # reading and splitting a very long answer is CPU work: a thread keeps the loop answering
        messages = await asyncio.to_thread(answer_messages, text)
        for i, (msg_type, content) in enumerate(messages):
            await self._reply(msg_type, content, f"{part}{i}")

    async def finish(self, answer: FinalAnswer) -> None:
        """Post the answer, then each Lark card payload as its own message in the same thread."""
        cards = lark_cards(answer.ui or self._ui)
        if answer.text.strip() or not cards:
            await self.send_text(answer.text)
        await self.deliver_thinking()
        for i, card in enumerate(cards):
            await self._reply("interactive", card, f"ui{i}")
        await self.deliver_attachments()

    async def fail(self, message: str) -> None:
        """A short apology with the safe reason (files tools already produced still follow)."""
        await self._reply("text", text_content(sorry(message)), "err")
        await self.deliver_attachments()

    def abandon(self) -> None:
        """Nothing runs between events here."""
