"""The Lark-native events `serve` acts on besides messages: bot menu, 👍/👎, document comments.

`App.submit` hands them here; each is acknowledged at once and worked on in a background task
kept in a set (closed with the App). A document comment is claimed in the inbound journal
before the ack (exactly once across redeliveries and replicas) and, should its replica die
mid-answer, handed back here by the dispatcher's recovery to be answered again; a menu click
becomes a DM message that the dispatcher claims; feedback rows are unique per person, answer
and kind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Coroutine
from contextlib import AsyncExitStack
from typing import Any

from larkbot.config import LarkConfig
from larkbot.lark.api.client import LarkClient, as_object
from larkbot.lark.claims.journal import InboundJournal
from larkbot.lark.events.doc_comments import COMMENT_EVENT, COMMENT_KIND, DocComments
from larkbot.lark.events.feedback import REACTION_CREATED, FeedbackRecorder
from larkbot.lark.events.menu import MENU_EVENT, BotMenu
from larkbot.lark.owners import Owners
from larkbot.lark.turns.dispatcher import Dispatcher
from larkbot.logs import get_logger
from larkbot.runtime_factory import Core
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.lark.events.native_events")
NATIVE_EVENTS = frozenset({MENU_EVENT, REACTION_CREATED, COMMENT_EVENT})


class NativeEvents:
    """Routes the native events to their handlers; owns their background tasks."""

    def __init__(self, menu: BotMenu, feedback: FeedbackRecorder, comments: DocComments) -> None:
        self.menu = menu
        self.feedback = feedback
        self.comments = comments
        self._tasks: set[asyncio.Task[Any]] = set()

    async def submit(self, event_type: str, envelope: dict[str, Any], signed: bool) -> str:
        """Take one verified event; returns at once (the work goes on in the background)."""
        if event_type == COMMENT_EVENT:
            ask = await self.comments.claim(envelope, signed)  # before the ack: exactly once
            if ask is None:
                return "ignored"
            self._start(self.comments.answer(ask), "lark-comment")
            return "queued"
        if event_type == MENU_EVENT:
            self._start(self.menu.handle(envelope, signed), "lark-menu")
            return "menu"
        if event_type == REACTION_CREATED:
            event = envelope.get("event")
            self._start(self.feedback.handle(as_object(event)), "lark-fb")
            return "feedback"
        return "ignored"

    def running(self) -> Collection[str]:
        """The comment claims being answered here (recovery leaves them alone)."""
        return self.comments.running

    async def resume(self, payload: str) -> bool:
        """Recovery took over a comment claim whose replica died: answer it again, here."""
        ask = await self.comments.reclaimed(payload)
        if ask is None:
            return False
        self._start(self.comments.answer(ask), "lark-comment")
        return True

    def _start(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)  # a reference, so the task is not collected mid-way
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("lark_native_event_failed", task=task.get_name(), exc_info=task.exception())

    async def idle(self, timeout: float) -> bool:
        """Wait (bounded) until no native event is being worked on; True when idle."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        return not self._tasks

    async def close(self) -> None:
        """Shutdown: stop what is still running (a comment's claim is left to its lease)."""
        for task in list(self._tasks):
            await cancel_and_wait(task)


async def start_native(
    stack: AsyncExitStack,
    client: LarkClient | None,
    core: Core,
    journal: InboundJournal,
    dispatcher: Dispatcher | None,
    agent: Any,
    owners: Owners,
    ids: tuple[str, str],
    lark: Callable[[], LarkConfig],
) -> NativeEvents | None:
    """Build the handlers, closed with `stack` (`ids`: the bot's open_id and app_id); the core
    made the feedback table. None without Lark credentials (nothing can be answered)."""
    if client is None or dispatcher is None:
        return None
    bot_open_id, app_id = ids
    services = core.runtime.services
    native = NativeEvents(
        BotMenu(client, dispatcher, lambda: lark().menu),
        FeedbackRecorder(client, core.feedback, app_id),
        DocComments(
            client,
            journal,
            agent,
            owners.check,
            services,
            bot_open_id,
            lambda: lark().turn_timeout_seconds,
        ),
    )
    dispatcher.recovers(COMMENT_KIND, native)  # a comment whose replica died is answered again
    stack.push_async_callback(native.close)
    return native
