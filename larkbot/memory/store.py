"""Memory rows in the shared database: who a memory is about, who wrote it, every version kept.

A memory is `me` (about one person: `subject` is their open_id) or `chat` (shared context of
one chat: `subject` is the chat). Consolidation never overwrites: the merged text is a new row
and the rows it replaces turn `superseded` (pointing at it), so a merge can be undone. Forget
deletes for real: a person who asks the bot to forget gets no hidden copy.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.storage.db import Database, metadata

ACTIVE, SUPERSEDED = "active", "superseded"
DROPPED, UNDONE = "-dropped", "-undone"  # `replaced_by` of a version no newer one replaced

memories = sa.Table(
    "memories",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),
    sa.Column("scope", sa.String(8), nullable=False),  # me | chat
    sa.Column("subject", sa.String(255), nullable=False),  # open_id (me) or chat key (chat)
    sa.Column("chat_id", sa.String(255), nullable=False),  # where it was saved
    sa.Column("author_id", sa.String(255), nullable=False),
    sa.Column("author_name", sa.String(255), nullable=False),
    sa.Column("author_owner", sa.Boolean, nullable=False),
    sa.Column("untrusted", sa.Boolean, nullable=False),  # the saving turn had read untrusted text
    sa.Column("pinned", sa.Boolean, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("terms", sa.Text, nullable=False),  # segmented words, space-separated
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("state", sa.String(12), nullable=False),
    sa.Column("replaced_by", sa.String(16), nullable=False, server_default=""),
    sa.Index("ix_memories_subject", "scope", "subject", "state"),
)

memory_passes = sa.Table(
    "memory_passes",
    metadata,
    sa.Column("day", sa.String(10), primary_key=True),  # one consolidation pass per day
    sa.Column("holder", sa.String(128), nullable=False),
)


def new_id() -> str:
    """A short id people can type (`/forget m1a2b3c4`)."""
    return "m" + secrets.token_hex(4)


@dataclass(frozen=True)
class Memory:
    """One stored memory."""

    id: str
    scope: str
    subject: str
    content: str
    author_id: str
    author_name: str = ""
    author_owner: bool = False
    untrusted: bool = False
    pinned: bool = False
    chat_id: str = ""
    terms: str = ""
    created_at: float = 0.0
    state: str = ACTIVE
    replaced_by: str = ""

    @property
    def trusted(self) -> bool:
        """Written by an owner in a turn that had read no untrusted text."""
        return self.author_owner and not self.untrusted

    def row(self) -> dict[str, Any]:
        """The table row."""
        return {c.name: getattr(self, c.name) for c in memories.columns}


FIELDS = [memories.c[f.name] for f in fields(Memory)]  # select in field order: Memory(*row)


def _memory(row: Any) -> Memory:
    return Memory(*row)


def _select() -> sa.Select[Any]:
    return sa.select(*FIELDS)


class MemoryStore:
    """Reads and writes `memories` on the shared Database (SQLite or PostgreSQL)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def init(self) -> None:
        """Create the tables if needed."""
        await self.db.create(memories, memory_passes)

    async def add(self, memory: Memory) -> None:
        """Insert one memory."""
        async with self.db.engine.begin() as conn:
            await conn.execute(memories.insert(), [memory.row()])

    async def get(self, memory_id: str) -> Memory | None:
        """One memory by id (any state)."""
        async with self.db.read() as conn:
            row = (await conn.execute(_select().where(memories.c.id == memory_id))).first()
        return _memory(row) if row else None

    async def candidates(self, person: str, chat: str) -> list[Memory]:
        """The active memories a turn of `person` in `chat` may recall, oldest first."""
        c = memories.c
        where = sa.or_(
            sa.and_(c.scope == "me", c.subject == person),
            sa.and_(c.scope == "chat", c.subject == chat),
        )
        query = _select().where(where, c.state == ACTIVE).order_by(c.created_at)
        async with self.db.read() as conn:
            return [_memory(r) for r in await conn.execute(query)]

    async def of_subject(
        self, scope: str, subject: str, *, all_states: bool = False
    ) -> list[Memory]:
        """One person's or chat's memories (active only unless `all_states`), oldest first."""
        c = memories.c
        query = _select().where(c.scope == scope, c.subject == subject)
        if not all_states:
            query = query.where(c.state == ACTIVE)
        async with self.db.read() as conn:
            return [_memory(r) for r in await conn.execute(query.order_by(c.created_at))]

    async def delete(self, ids: list[str]) -> int:
        """Delete memories and every version they replaced (forget means gone); the number of
        active memories deleted."""
        if not ids:
            return 0
        c = memories.c
        async with self.db.engine.begin() as conn:
            doomed, frontier = set(ids), list(ids)
            while frontier:  # merged twice: versions of versions
                rows = await conn.execute(sa.select(c.id).where(c.replaced_by.in_(frontier)))
                frontier = [r[0] for r in rows if r[0] not in doomed]
                doomed.update(frontier)
            active = sa.select(sa.func.count()).where(c.id.in_(doomed), c.state == ACTIVE)
            count = int((await conn.execute(active)).scalar_one())
            await conn.execute(memories.delete().where(c.id.in_(doomed)))
        return count

    async def supersede(self, old_ids: list[str], new: Memory | None) -> None:
        """Replace `old_ids` by `new` (or drop them) in one transaction; all kept for undo."""
        c = memories.c
        async with self.db.engine.begin() as conn:
            if new is not None:
                await conn.execute(memories.insert(), [new.row()])
            retire = memories.update().where(c.id.in_(old_ids), c.state == ACTIVE)
            await conn.execute(
                retire.values(state=SUPERSEDED, replaced_by=new.id if new else DROPPED)
            )

    async def undo(self, memory_id: str) -> int:
        """Undo a pass's change: bring back what `memory_id` replaced and retire it, or bring
        `memory_id` itself back when the pass dropped it; the number restored."""
        c = memories.c
        update = memories.update()
        async with self.db.engine.begin() as conn:
            back = await conn.execute(
                update.where(c.replaced_by == memory_id).values(state=ACTIVE, replaced_by="")
            )
            if back.rowcount:
                await conn.execute(
                    update.where(c.id == memory_id).values(state=SUPERSEDED, replaced_by=UNDONE)
                )
            else:
                back = await conn.execute(
                    update.where(c.id == memory_id, c.replaced_by == DROPPED).values(
                        state=ACTIVE, replaced_by=""
                    )
                )
        return int(back.rowcount or 0)

    async def groups(self, since: float) -> list[tuple[str, str, str]]:
        """(scope, subject, author) groups with 2+ active memories, one written after `since`."""
        c = memories.c
        key = (c.scope, c.subject, c.author_id)
        query = (
            sa.select(*key)
            .where(c.state == ACTIVE)
            .group_by(*key)
            .having(sa.func.count() > 1, sa.func.max(c.created_at) > since)
        )
        async with self.db.read() as conn:
            return [(r[0], r[1], r[2]) for r in await conn.execute(query)]

    async def claim_pass(self, day: str, holder: str) -> bool:
        """Take the day's consolidation pass; False when a replica already took it."""
        dialect: Any = sqlite if self.db.is_sqlite else postgresql
        stmt = dialect.insert(memory_passes).values(day=day, holder=holder).on_conflict_do_nothing()
        async with self.db.engine.begin() as conn:
            return bool((await conn.execute(stmt)).rowcount == 1)

    async def of_scope(self, scope: str) -> list[Memory]:
        """Every active memory of one scope (the owner's web view of chat memories)."""
        c = memories.c
        query = _select().where(c.scope == scope, c.state == ACTIVE)
        async with self.db.read() as conn:
            return [_memory(r) for r in await conn.execute(query.order_by(c.created_at))]
