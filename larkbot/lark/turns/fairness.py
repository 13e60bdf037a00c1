"""Fair turns: non-owners' limits per sender and per chat, and an owners' lane for turn slots.

One non-owner flooding the bot must neither run up LLM calls without bound nor make an owner
wait: each non-owner sender and each chat may only have so many turns queued and start so many
per minute (`limits:`), and of `lark.max_concurrent_turns` slots owners are served first and
`limits.owner_reserved_turns` are theirs alone. Owners themselves are never limited here.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from larkbot.config_sections import LimitsConfig
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.logs import get_logger
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.lark.turns.dispatcher")
Notify = Callable[[InboundMessage, str], Coroutine[Any, Any, None]]  # a reply outside turns

WINDOW = 60.0  # seconds: "turns per minute"


class SenderLimits:
    """Counts non-owners' queued turns and recent starts per sender and per chat."""

    def __init__(
        self, config: Callable[[], LimitsConfig], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config
        self.clock = clock
        self.queued: Counter[str] = Counter()
        self._recent: dict[str, deque[float]] = {}
        self._noticed: dict[str, float] = {}  # sender → when they were last told

    def _rate(self, key: str, now: float) -> int:
        stamps = self._recent.get(key)
        while stamps and now - stamps[0] > WINDOW:
            stamps.popleft()
        if stamps is not None and not stamps:
            del self._recent[key]
        return len(stamps or ())

    def admit(self, sender: str, chat: str) -> str | None:
        """Record one more turn for `sender` in `chat`, or say (for the user) why it is refused."""
        cfg, now = self.config(), self.clock()
        you, here = f"sender:{sender}", f"chat:{chat}"
        if len(self._recent) > 4096:  # forget senders and chats quiet for a minute
            for key in list(self._recent):
                self._rate(key, now)
        if self.queued[you] >= cfg.queued_per_sender:
            return (
                f"I am still working on your earlier messages ({self.queued[you]} waiting). "
                "Please wait for those answers before sending more."
            )
        if self._rate(you, now) >= cfg.turns_per_minute_per_sender:
            return (
                f"You have sent {cfg.turns_per_minute_per_sender} messages in the last minute, "
                "the most I answer for one person. Please try again in a minute."
            )
        if self.queued[here] >= cfg.queued_per_chat:
            return "This chat has too many questions waiting. Please try again shortly."
        if self._rate(here, now) >= cfg.turns_per_minute_per_chat:
            return "This chat has reached its limit of answers per minute. Please try again soon."
        for key in (you, here):
            self.queued[key] += 1
            self._recent.setdefault(key, deque()).append(now)
        return None

    def finished(self, sender: str, chat: str) -> None:
        """A turn admitted by `admit` left the queue (answered, stopped or dropped)."""
        for key in (f"sender:{sender}", f"chat:{chat}"):
            self.queued[key] -= 1
            if self.queued[key] <= 0:
                del self.queued[key]

    def should_notify(self, sender: str) -> bool:
        """At most one limit notice per sender per minute: replies must not amplify a flood."""
        now = self.clock()
        for who, when in list(self._noticed.items()):  # forget old notices (bounded memory)
            if now - when > WINDOW:
                del self._noticed[who]
        if sender in self._noticed:
            return False
        self._noticed[sender] = now
        return True


class TurnSlots:
    """`total` concurrent turns; waiting owners go first and `reserved` slots are owners' only."""

    def __init__(self, total: int, reserved: int) -> None:
        self.total = total
        self.reserved = min(max(reserved, 0), total - 1)  # non-owners keep at least one slot
        self.running = 0
        self.running_others = 0
        self._owners: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    def _fits(self, owner: bool) -> bool:
        if owner:
            return self.running < self.total
        return self.running < self.total and self.running_others < self.total - self.reserved

    def _take(self, owner: bool) -> None:
        self.running += 1
        self.running_others += not owner

    def _wake(self) -> None:
        """Hand free slots to waiters: owners first, then non-owners in arrival order."""
        for owner, waiters in ((True, self._owners), (False, self._others)):
            while waiters and self._fits(owner):
                waiter = waiters.popleft()
                if not waiter.done():
                    self._take(owner)
                    waiter.set_result(None)

    @asynccontextmanager
    async def hold(self, owner: bool) -> AsyncIterator[None]:
        """Hold one slot for the body; an owner never queues behind a non-owner."""
        waiting = self._owners if owner else self._others
        if waiting or not self._fits(owner):
            waiter = asyncio.get_running_loop().create_future()
            waiting.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # woken, then cancelled
                    self._release(owner)
                elif waiter in waiting:
                    waiting.remove(waiter)
                raise
        else:
            self._take(owner)
        try:
            yield
        finally:
            self._release(owner)

    def _release(self, owner: bool) -> None:
        self.running -= 1
        self.running_others -= not owner
        self._wake()


class LimitNotices:
    """Says why a message is not answered (once a minute per sender), without waiting."""

    def __init__(self, notify: Notify | None, limits: SenderLimits) -> None:
        self.notify = notify
        self.limits = limits
        self._tasks: set[asyncio.Task[None]] = set()

    def tell(self, msg: InboundMessage, refusal: str) -> None:
        """Log the refusal; reply with it unless this sender heard one within the minute."""
        log.info("lark_sender_limited", sender=msg.sender_open_id, chat_id=msg.chat_id)
        if self.notify is None or not self.limits.should_notify(msg.sender_open_id):
            return
        task = asyncio.create_task(self.notify(msg, refusal), name="lark-limit-notice")
        self._tasks.add(task)  # a reference, so the task is not collected mid-way
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("lark_limit_notice_failed", exc_info=task.exception())

    async def close(self) -> None:
        """Cancel the notices still being sent (the HTTP client closes next)."""
        for task in list(self._tasks):
            await cancel_and_wait(task)
