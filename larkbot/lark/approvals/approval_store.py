"""Approval requests in the database, so a card click can land on any replica.

The replica running the turn `open`s a row (pending, with its expiry) before the card goes out
and `wait`s on it. Whichever replica receives the click records it with `UPDATE … WHERE state =
'pending' AND expires_at > now`: the first answer wins, a second one finds the row answered.
The winner then signals every replica (`storage.signals`: LISTEN/NOTIFY on PostgreSQL, Redis
pub/sub when `storage.redis_url` is set, else nothing); the row is the truth, so the waiter also
re-reads it every `poll_seconds` (0.5 s with SQLite, whose replicas share one host).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from larkbot.storage.db import Database, metadata
from larkbot.storage.signals import Signal

State = Literal["pending", "approved", "denied", "expired"]
PURGE_AFTER = 7 * 86_400.0  # answered rows are kept a week, for a late click's reply

lark_approvals = sa.Table(
    "lark_approvals",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("tool", sa.String(128), nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("arguments", sa.Text, nullable=False),  # JSON, for the resolved card
    sa.Column("asker", sa.String(255), nullable=False),  # the turn's sender (open_id)
    sa.Column("message_id", sa.String(64), nullable=False, default=""),  # the card, once sent
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("answered_by", sa.String(255), nullable=False, default=""),
    sa.Column("answered_at", sa.Float, nullable=True),
)


@dataclass(frozen=True)
class ApprovalRow:
    """One stored approval request as any replica reads it."""

    approval_id: str
    tool: str
    description: str
    arguments: dict[str, Any]
    asker: str
    message_id: str
    expires_at: float
    state: State
    answered_by: str


def _row(r: Any) -> ApprovalRow:
    return ApprovalRow(
        r.id,
        r.tool,
        r.description,
        json.loads(r.arguments),
        r.asker,
        r.message_id,
        r.expires_at,
        r.state,
        r.answered_by,
    )


class ApprovalStore:
    """The shared table of approvals, the first-answer-wins update and the wake-up signal."""

    def __init__(self, db: Database, signal: Signal) -> None:
        self.db = db
        self.signal = signal
        self._waiting: dict[str, asyncio.Event] = {}
        self._abandoned = False

    async def init(self) -> None:
        """Create the table, listen for answers, drop week-old rows."""
        await self.db.create(lark_approvals)
        await self.signal.start(self._wake)
        async with self.db.engine.begin() as conn:
            old = self.db.clock.now() - PURGE_AFTER
            await conn.execute(lark_approvals.delete().where(lark_approvals.c.created_at < old))

    async def close(self) -> None:
        """Stop listening."""
        await self.signal.close()

    def _wake(self, approval_id: str) -> None:
        event = self._waiting.get(approval_id)
        if event is not None:
            event.set()

    async def open(
        self,
        approval_id: str,
        tool: str,
        description: str,
        arguments: dict[str, Any],
        asker: str,
        timeout: float,
    ) -> ApprovalRow:
        """Store a pending request (before its card is sent: the click may come at once)."""
        await self.db.clock.sync()
        now = self.db.clock.now()  # deadlines in the database's time: replicas' clocks drift
        self._waiting[approval_id] = asyncio.Event()
        values = {
            "id": approval_id,
            "tool": tool,
            "description": description,
            "arguments": json.dumps(arguments, ensure_ascii=False, default=str),
            "asker": asker,
            "message_id": "",
            "created_at": now,
            "expires_at": now + timeout,
            "state": "pending",
            "answered_by": "",
        }
        async with self.db.engine.begin() as conn:
            await conn.execute(lark_approvals.insert().values(**values))
        row = await self.get(approval_id)
        assert row is not None
        return row

    async def sent(self, approval_id: str, message_id: str) -> None:
        """Record the card's message id (the asking replica patches it on expiry)."""
        query = (
            lark_approvals.update()
            .where(lark_approvals.c.id == approval_id)
            .values(message_id=message_id)
        )
        async with self.db.engine.begin() as conn:
            await conn.execute(query)

    async def get(self, approval_id: str) -> ApprovalRow | None:
        """The stored request, or None when there is none (unknown or purged)."""
        query = sa.select(lark_approvals).where(lark_approvals.c.id == approval_id)
        async with self.db.read() as conn:
            found = (await conn.execute(query)).first()
        return _row(found) if found is not None else None

    async def answer(self, approval_id: str, state: State, by: str) -> bool:
        """Record a click; True when it is the first answer (and in time), False otherwise."""
        c = lark_approvals.c
        await self.db.clock.sync()
        now = self.db.clock.now()
        query = (
            lark_approvals.update()
            .where(c.id == approval_id, c.state == "pending", c.expires_at > now)
            .values(state=state, answered_by=by, answered_at=now)
        )
        async with self.db.engine.begin() as conn:
            won = (await conn.execute(query)).rowcount == 1
        if won:
            await self.signal.publish(approval_id)
        return won

    async def close_as_expired(self, approval_id: str) -> ApprovalRow | None:
        """Write `expired` unless an answer won first; the row as it then stands."""
        c = lark_approvals.c
        query = (
            lark_approvals.update()
            .where(c.id == approval_id, c.state == "pending")
            .values(state="expired", answered_at=self.db.clock.now())
        )
        async with self.db.engine.begin() as conn:
            await conn.execute(query)
        return await self.get(approval_id)

    async def wait(self, approval_id: str) -> ApprovalRow:
        """The row once answered, or once expired (written here, at the deadline)."""
        event = self._waiting.setdefault(approval_id, asyncio.Event())
        try:
            while True:
                row = await self.get(approval_id)
                if row is None:
                    raise LookupError(f"approval {approval_id} vanished from the database")
                if row.state != "pending":
                    return row
                left = row.expires_at - self.db.clock.now()
                if left <= 0 or self._abandoned:
                    return await self.close_as_expired(approval_id) or row
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, self.signal.poll_seconds)):
                        await event.wait()
                event.clear()
        finally:
            self._waiting.pop(approval_id, None)

    def abandon_all(self) -> None:
        """Shutdown: every wait here ends now, as expired (a later click finds it so)."""
        self._abandoned = True
        for event in self._waiting.values():
            event.set()
