"""👍 / 👎 reactions on the bot's answers (`im.message.reaction.created_v1`) become feedback.

The event names the message and the emoji, not who sent the message: one GET of the message
tells whether it is one of this bot's answers (sender: this app) and which turn it answered
(its parent, the person's message) in which session; a scheduled job's message (no parent)
belongs to the job's `schedule:<id>` session, which the web page shows. Reactions by apps,
other emoji and reactions on anybody else's messages are ignored. The bot never reacts to
people's messages.
Lark calls: 1 (GET message) per 👍/👎; none for any other emoji.
"""

from __future__ import annotations

import json
import time
from typing import Any

from larkbot.lark.api.client import LarkClient, as_object
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.turns.routing import session_id_for
from larkbot.logs import get_logger
from larkbot.metrics import count_feedback
from larkbot.scheduler.delivery import job_of
from larkbot.storage.feedback import Feedback, FeedbackStore, Kind

log = get_logger("larkbot.lark.events.feedback")
REACTION_CREATED = "im.message.reaction.created_v1"
# Lark's emoji_type keys: "THUMBSUP" and "ThumbsDown" (compared case-insensitively)
KINDS: dict[str, Kind] = {"thumbsup": "up", "thumbsdown": "down"}


def _seconds(ms: Any) -> float:
    try:
        return int(str(ms)) / 1000.0
    except ValueError:
        return time.time()


def _content_text(message: dict[str, Any]) -> str:
    """The message's content as readable text (a card's JSON with its characters unescaped)."""
    raw = str(as_object(message.get("body")).get("content") or "")
    try:
        return json.dumps(json.loads(raw), ensure_ascii=False)
    except ValueError:
        return raw


class FeedbackRecorder:
    """Turns a reaction event into a stored, counted feedback row (or nothing)."""

    def __init__(self, client: LarkClient, store: FeedbackStore, app_id: str) -> None:
        self.client = client
        self.store = store
        self.app_id = app_id

    async def handle(self, event: dict[str, Any]) -> str:
        """Record the reaction when it is 👍/👎 by a person on one of this bot's answers."""
        emoji = str(as_object(event.get("reaction_type")).get("emoji_type") or "")
        kind = KINDS.get(emoji.lower())
        open_id = str(as_object(event.get("user_id")).get("open_id") or "")
        message_id = str(event.get("message_id") or "")
        if kind is None or event.get("operator_type") == "app" or not open_id or not message_id:
            return "ignored"
        try:
            message = await self.client.get_message(message_id)
        except LarkAPIError as err:
            log.info("lark_feedback_message_unreadable", code=err.code)
            return "ignored"
        sender = as_object(message.get("sender"))
        if sender.get("sender_type") != "app" or sender.get("id") != self.app_id:
            return "ignored"  # somebody's message, or another bot's
        chat_id, thread_id = str(message.get("chat_id") or ""), str(message.get("thread_id") or "")
        place = InboundMessage(message_id, chat_id, "", "", "", thread_id=thread_id)
        session = session_id_for(place)  # the session the answer belongs to
        turn = str(message.get("parent_id") or "")
        job = None if turn else job_of(_content_text(message))
        if job is not None:  # a scheduled job's message: its runs' session
            session = f"schedule:{job}"
        item = Feedback(
            answer_id=message_id,
            open_id=open_id,
            kind=kind,
            session_id=session,
            turn_id=turn,
            chat_id=chat_id,
            at=_seconds(event.get("action_time")),
        )
        if not await self.store.record(item):
            return "duplicate"
        count_feedback(kind)
        log.info("lark_feedback", kind=kind, chat_id=chat_id, answer=message_id)
        return "recorded"
