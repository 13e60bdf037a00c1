"""👍 / 👎 on the bot's answers: one row per person, answer and kind, in the shared database.

Written by the Lark channel (`lark/events/feedback.py`, from `im.message.reaction.created_v1`), read
by the web page's session view; both go through this leaf, so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from larkbot.storage.db import Database, metadata

Kind = Literal["up", "down"]

feedback_table = sa.Table(
    "feedback",
    metadata,
    sa.Column("answer_id", sa.String(64), primary_key=True),  # the bot's message reacted on
    sa.Column("open_id", sa.String(255), primary_key=True),  # who
    sa.Column("kind", sa.String(8), primary_key=True),  # up | down
    sa.Column("session_id", sa.String(255), nullable=False, index=True),
    sa.Column("turn_id", sa.String(64), nullable=False, default=""),  # the message it answered
    sa.Column("chat_id", sa.String(64), nullable=False, default=""),
    sa.Column("at", sa.Float, nullable=False),  # when (Lark's action_time, seconds)
)


@dataclass(frozen=True)
class Feedback:
    """One reaction on one answer."""

    answer_id: str
    open_id: str
    kind: Kind
    session_id: str
    turn_id: str
    chat_id: str
    at: float


class FeedbackStore:
    """Record feedback once per person, answer and kind; count it per session."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def init(self) -> None:
        """Create the table (idempotent); called once at start by the core."""
        await self.db.create(feedback_table)

    async def record(self, item: Feedback) -> bool:
        """Store it; False when this person's same reaction on that answer was stored before."""
        try:
            async with self.db.engine.begin() as conn:
                await conn.execute(feedback_table.insert().values(**vars(item)))
        except IntegrityError:  # a redelivered event, or a reaction removed and put back
            return False
        return True

    async def counts(self, session_id: str) -> dict[str, int]:
        """`{"up": n, "down": m}` for one session."""
        return (await self.counts_many([session_id]))[session_id]

    async def counts_many(self, session_ids: list[str]) -> dict[str, dict[str, int]]:
        """`{session_id: {"up": n, "down": m}}` for every id given, in one query."""
        found = {sid: {"up": 0, "down": 0} for sid in session_ids}
        if not found:
            return found
        c = feedback_table.c
        query = (
            sa.select(c.session_id, c.kind, sa.func.count())
            .where(c.session_id.in_(list(found)))
            .group_by(c.session_id, c.kind)
        )
        async with self.db.read() as conn:
            rows = (await conn.execute(query)).all()
        for sid, kind, n in rows:
            if kind in ("up", "down"):  # only these are written; anything else is not shown
                found[str(sid)][str(kind)] = int(n)
        return found
