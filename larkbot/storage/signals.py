"""Cross-replica wake-ups for answers (web consents, Lark approvals): PostgreSQL LISTEN/NOTIFY,
Redis pub/sub, or none.

A signal only says "request X was answered; read it from the database". The database row is
the truth, so a lost signal costs latency, never correctness: waiters also re-read their row
every `poll_seconds` (fast without a signal, slow with one). Each kind of request has its own
channel, so a replica only hears about its own kind.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol

import sqlalchemy as sa

from larkbot.logs import get_logger
from larkbot.storage.db import Database

log = get_logger(__name__)
CONSENT_CHANNEL = "larkbot_consent"  # web consent answers (consent_board.py)
APPROVAL_CHANNEL = "larkbot_approval"  # Lark approval clicks (lark/approvals/approval_store.py)
Handler = Callable[[str], None]


class Signal(Protocol):
    """Publish a request id to every replica; call the handler for ids others publish."""

    poll_seconds: float

    async def start(self, handler: Handler) -> None:
        """Begin listening."""
        ...

    async def publish(self, request_id: str) -> None:
        """Tell every replica (this one included) that `request_id` was answered."""
        ...

    async def close(self) -> None:
        """Stop listening."""
        ...


class LocalSignal:
    """One process (or SQLite shared by a few): no messages, waiters poll the row often."""

    poll_seconds = 0.5

    def __init__(self) -> None:
        self._handler: Handler | None = None

    async def start(self, handler: Handler) -> None:
        """Remember the handler (publish calls it directly)."""
        self._handler = handler

    async def publish(self, request_id: str) -> None:
        """Only this process is told; others find the answer by polling."""
        if self._handler is not None:
            self._handler(request_id)

    async def close(self) -> None:
        """Nothing to close."""


class PostgresSignal:
    """LISTEN on a dedicated pooled connection; NOTIFY through the engine."""

    poll_seconds = 2.0

    def __init__(self, db: Database, channel: str = CONSENT_CHANNEL) -> None:
        self.db = db
        self.channel = channel
        self._conn: Any = None
        self._raw: Any = None

    async def start(self, handler: Handler) -> None:
        """Check out one connection for good and LISTEN on it."""

        def on_notify(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            handler(payload)

        self._conn = await self.db.engine.connect()
        raw = await self._conn.get_raw_connection()
        self._raw = raw.driver_connection
        await self._raw.add_listener(self.channel, on_notify)

    async def publish(self, request_id: str) -> None:
        """NOTIFY every listening replica (committed, so they can read the row)."""
        async with self.db.engine.begin() as conn:
            await conn.execute(
                sa.text("SELECT pg_notify(:c, :p)"), {"c": self.channel, "p": request_id}
            )

    async def close(self) -> None:
        """Release the listening connection."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
            self._conn = None


class RedisSignal:
    """Redis pub/sub on `storage.redis_url`."""

    poll_seconds = 2.0

    def __init__(self, url: str, channel: str = CONSENT_CHANNEL) -> None:
        import redis.asyncio as redis

        self.channel = channel
        self._redis = redis.from_url(url)
        self._task: asyncio.Task[None] | None = None

    async def start(self, handler: Handler) -> None:
        """Subscribe and hand each message to `handler` from a background task."""
        pubsub = self._redis.pubsub()
        await pubsub.subscribe(self.channel)

        async def listen() -> None:
            try:
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        data = message.get("data")
                        handler(data.decode() if isinstance(data, bytes) else str(data))
            except asyncio.CancelledError:
                raise
            except Exception:  # the row poll still finds answers
                log.warning("answer_signal_lost", channel=self.channel, exc_info=True)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

        self._task = asyncio.create_task(listen(), name=f"{self.channel}-redis")

    async def publish(self, request_id: str) -> None:
        """PUBLISH to every replica."""
        await self._redis.publish(self.channel, request_id)

    async def close(self) -> None:
        """Stop listening and close the client."""
        if self._task is not None:
            from larkbot.tasks import cancel_and_wait

            await cancel_and_wait(self._task)
        await self._redis.aclose()


def make_signal(db: Database, redis_url: str, channel: str = CONSENT_CHANNEL) -> Signal:
    """Redis when configured, else NOTIFY on PostgreSQL, else local only."""
    if redis_url:
        return RedisSignal(redis_url, channel)
    if not db.is_sqlite:
        return PostgresSignal(db, channel)
    return LocalSignal()
