"""A Lark message's place: its session, whether the bot answers it, its entry in the queue."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from larkbot.config import LarkConfig
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.logs import get_logger
from larkbot.storage.sessions import SessionStore

log = get_logger("larkbot.lark.turns.routing")


def session_id_for(msg: InboundMessage) -> str:
    """One session per chat; per thread when the message is in a thread (topic groups)."""
    return f"lark:{msg.chat_id}:{msg.thread_id}" if msg.thread_id else f"lark:{msg.chat_id}"


def should_answer(msg: InboundMessage, lark: LarkConfig) -> str | None:
    """None when the bot should answer, else why it stays silent."""
    if msg.is_dm or lark.group_policy == "all":
        return None
    if msg.mentions_bot:
        return None
    if msg.mentioned_all and lark.answer_at_all:
        return None
    return "group message without a mention of this bot"


async def silence_reason(
    msg: InboundMessage, lark: LarkConfig, sessions: SessionStore | None
) -> str | None:
    """`should_answer`, except that a message in a topic the bot answered in needs no @
    (`lark.topic_follow_up`)."""
    silent = should_answer(msg, lark)
    if not (silent and msg.thread_id and sessions and lark.topic_follow_up):
        return silent
    try:
        return None if await sessions.exists(session_id_for(msg)) else silent
    except Exception:  # storage trouble: fall back to needing the @
        log.warning("lark_topic_lookup_failed", exc_info=True)
        return silent


@dataclass
class Queued:
    """One accepted message in its session's queue."""

    msg: InboundMessage
    # the journal claim: a task on the webhook's path (`Dispatcher.accept`), done when resumed
    claim: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    task: asyncio.Task[None] | None = None  # the running turn
    stopped: str = ""  # why it must not run on or answer: "recalled" | "stopped" | "lost"
    owner: bool = False  # the owners' lane: ahead of non-owners' waiting turns
    counted: bool = False  # counted against its sender's and chat's limits until it leaves


def enqueue_position(queue: deque[Queued], owner: bool) -> int:
    """Where a new turn goes: last, or for an owner ahead of non-owners' turns still waiting.

    The head (running, or about to) is never overtaken, so an owner waits at most one turn.
    """
    if not owner:
        return len(queue)
    # Behind the head the queue is owners' turns then non-owners' (this keeps it so): walk back
    # over the non-owners only, so a busy owner's long queue costs nothing per message.
    index = len(queue)
    while index > 1 and not queue[index - 1].owner:
        index -= 1
    return index
