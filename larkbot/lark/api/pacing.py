"""Send pacing: messages to one chat go out in order at Lark's per-chat rate, all within the app's.

Lark's send and reply pages: at most 5 messages per second to one user or one group (shared by
every bot in it), and 50 per second / 1,000 per minute per app for these endpoints
(https://open.feishu.cn/document/server-docs/im-v1/message/create ; the 429 / 99991400 answer
and its `x-ogw-ratelimit-reset` header: .../server-docs/api-call-guide/frequency-control).

Each chat has its own FIFO lock and sliding window: a send holds its chat's lock for the whole
call, retries after a rate-limit answer included, so a burst to one chat arrives complete and
in order, while the waiting is an `await` on that chat's lock — other chats' sends go on
meanwhile. A window admits at most `limit` attempts in any `window` seconds (plus a small
margin for network jitter), the same rule a sliding-window limiter on Lark's side applies. One
window for the app bounds this replica's total rate, another its messages per minute (replicas
each keep their own; Lark's 429 with `x-ogw-ratelimit-reset` covers the rest).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

PER_CHAT = 5  # messages per second to one chat
PER_APP = 50  # calls per second, the whole app
MESSAGES_PER_MINUTE = 1000  # sends and replies, the whole app
MARGIN = 0.05  # seconds added to each window: arrival times jitter by a few ms
MAX_LANES = 10_000  # chats remembered at once; idle, quiet ones are dropped past it


@dataclass
class SlidingWindow:
    """At most `limit` admissions in any `window` seconds; `admit()` waits for a slot."""

    limit: int
    window: float = 1.0
    times: deque[float] = field(default_factory=deque)

    def delay(self) -> float:
        """Book the next slot; the seconds until it (0 when one is free now)."""
        now = time.monotonic()
        span = self.window + MARGIN
        while self.times and self.times[0] <= now - span:
            self.times.popleft()
        at = now if len(self.times) < self.limit else self.times[-self.limit] + span
        self.times.append(max(at, now))
        while len(self.times) > self.limit:
            self.times.popleft()
        return max(0.0, at - now)

    def quiet(self) -> bool:
        """True when nothing was admitted within the last window (nothing to remember)."""
        return not self.times or self.times[-1] <= time.monotonic() - self.window - MARGIN

    async def admit(self) -> None:
        """Wait (asynchronously) for this caller's slot."""
        wait = self.delay()
        if wait > 0:
            await asyncio.sleep(wait)


@dataclass
class _Lane:
    lock: asyncio.Lock
    window: SlidingWindow
    users: int = 0


class Pacer:
    """Per-chat ordered lanes plus one app-wide window (see the module doc)."""

    def __init__(
        self,
        per_chat: int = PER_CHAT,
        per_app: int = PER_APP,
        window: float = 1.0,
        messages_per_minute: int = MESSAGES_PER_MINUTE,
    ) -> None:
        self.per_chat = per_chat
        self.window = window  # seconds; the limits are per this window (Lark's: 1 s)
        self.app = SlidingWindow(per_app, window)
        self.messages = SlidingWindow(messages_per_minute, 60 * window)
        self._lanes: dict[str, _Lane] = {}

    @contextlib.asynccontextmanager
    async def lane(self, chat: str) -> AsyncIterator[None]:
        """Hold `chat`'s lane (FIFO) for one whole send, retries included."""
        lane = self._lanes.get(chat)
        if lane is None:
            lane = _Lane(asyncio.Lock(), SlidingWindow(self.per_chat, self.window))
            self._lanes[chat] = lane
        lane.users += 1
        try:
            async with lane.lock:
                yield
        finally:
            lane.users -= 1
            if len(self._lanes) > MAX_LANES:
                self._prune()

    def _prune(self) -> None:
        idle = [c for c, lane in self._lanes.items() if not lane.users and lane.window.quiet()]
        for chat in idle:
            del self._lanes[chat]

    async def attempt(self, chat: str) -> None:
        """Before each HTTP attempt: the chat's slot (when `chat` names a lane), then the app's."""
        lane = self._lanes.get(chat) if chat else None
        if lane is not None:
            await lane.window.admit()
            await self.messages.admit()
        await self.app.admit()

    def lanes(self) -> int:
        """Chats currently remembered (for tests and metrics)."""
        return len(self._lanes)
