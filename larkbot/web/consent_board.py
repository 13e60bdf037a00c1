"""Pending web consent requests in the database: the first answer wins, on any replica.

`open` stores a request; `answer` (from `POST /api/consent/{id}`, on whichever replica the
user's click lands) sets its decision with `UPDATE … WHERE decision IS NULL AND expires_at >
now`, so exactly one answer wins, then signals every replica; `wait` (on the replica running
the turn) returns when the decision is there, or writes `expired` when time is up.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa

from larkbot.storage.db import Database, metadata
from larkbot.storage.signals import Signal

Decision = Literal["allow_once", "allow_session", "deny", "expired", "cancelled"]
ANSWERS = ("allow_once", "allow_session", "deny")
Outcome = Literal["ok", "unknown", "answered"]
PURGE_AFTER = 86_400.0

web_consents = sa.Table(
    "web_consents",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("session_id", sa.String(255), nullable=False),
    sa.Column("tool", sa.String(128), nullable=False),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("always", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("decision", sa.String(16), nullable=True),
    sa.Column("answered_at", sa.Float, nullable=True),
)


@dataclass(frozen=True)
class OpenRequest:
    """A stored, unanswered request."""

    request_id: str
    expires_at: float


class ConsentBoard:
    """Stores requests, records answers, wakes the waiting turn (here or on another replica)."""

    def __init__(self, db: Database, signal: Signal, timeout: float = 300.0) -> None:
        self.db = db
        self.signal = signal
        self.timeout = timeout
        self._waiting: dict[str, asyncio.Event] = {}

    async def init(self) -> None:
        """Create the table, listen for answers, drop day-old rows."""
        await self.db.create(web_consents)
        await self.signal.start(self._wake)
        async with self.db.engine.begin() as conn:
            old = time.time() - PURGE_AFTER
            await conn.execute(web_consents.delete().where(web_consents.c.created_at < old))

    async def close(self) -> None:
        """Stop listening."""
        await self.signal.close()

    def _wake(self, request_id: str) -> None:
        event = self._waiting.get(request_id)
        if event is not None:
            event.set()

    async def open(self, session_id: str, tool: str, scope: str, always: bool) -> OpenRequest:
        """Store a new request; the caller shows it and then `wait`s."""
        now = time.time()
        req = OpenRequest(f"cr_{uuid.uuid4().hex}", now + self.timeout)
        self._waiting[req.request_id] = asyncio.Event()
        row = {
            "id": req.request_id,
            "session_id": session_id,
            "tool": tool,
            "scope": scope,
            "always": always,
            "created_at": now,
            "expires_at": req.expires_at,
        }
        async with self.db.engine.begin() as conn:
            await conn.execute(web_consents.insert().values(**row))
        return req

    async def answer(self, request_id: str, decision: str) -> Outcome:
        """Record the first answer: ok; 'answered' when one (or the expiry) came first."""
        c = web_consents.c
        now = time.time()
        query = (
            web_consents.update()
            .where(c.id == request_id, c.decision.is_(None), c.expires_at > now)
            .values(decision=decision, answered_at=now)
        )
        async with self.db.engine.begin() as conn:
            won = (await conn.execute(query)).rowcount == 1
            if not won:
                found = await conn.execute(sa.select(c.id).where(c.id == request_id))
                return "answered" if found.first() is not None else "unknown"
        await self.signal.publish(request_id)
        return "ok"

    async def decision(self, request_id: str) -> str | None:
        """The stored decision, if any."""
        c = web_consents.c
        async with self.db.read() as conn:
            row = await conn.execute(sa.select(c.decision).where(c.id == request_id))
            value = row.scalar()
        return str(value) if value is not None else None

    async def wait(self, req: OpenRequest) -> Decision:
        """The decision once answered; `expired` when none came in time; `cancelled` on cancel."""
        event = self._waiting.setdefault(req.request_id, asyncio.Event())
        try:
            while True:
                found = await self.decision(req.request_id)
                if found is not None:
                    return found  # type: ignore[return-value]
                left = req.expires_at - time.time()
                if left <= 0:
                    return await self._close_as(req.request_id, "expired")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(left, self.signal.poll_seconds))
                event.clear()
        except asyncio.CancelledError:
            await asyncio.shield(self._close_as(req.request_id, "cancelled"))
            raise
        finally:
            self._waiting.pop(req.request_id, None)

    async def _close_as(self, request_id: str, decision: Decision) -> Decision:
        """Write `decision` unless an answer won just before; return what stands."""
        c = web_consents.c
        query = (
            web_consents.update()
            .where(c.id == request_id, c.decision.is_(None))
            .values(decision=decision, answered_at=time.time())
        )
        async with self.db.engine.begin() as conn:
            if (await conn.execute(query)).rowcount == 1:
                return decision
        return (await self.decision(request_id)) or decision  # type: ignore[return-value]
