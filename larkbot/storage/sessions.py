"""Session histories: OpenAI-format messages in SQL rows, surviving restarts.

Each `append` is one row holding a JSON array of messages (the agent appends once per turn),
so a long session is tens of rows, not thousands, and a tool call and its results always
share a row.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from larkbot.content_parts import IMAGE_PART_CHARS, image_count, text_of
from larkbot.storage.db import Database, metadata

Message = dict[str, Any]

session_history = sa.Table(
    "session_history",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(255), nullable=False, index=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
    sa.Column("messages", sa.Text, nullable=False),  # JSON array
)


@dataclass(frozen=True)
class SessionInfo:
    """A stored session: id, number of messages, last write (unix seconds)."""

    session_id: str
    messages: int
    updated_at: float


class SessionStore:
    """Append-only message log per session on the shared Database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def init(self) -> None:
        """Create the table if needed."""
        await self.db.create(session_history)

    async def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append messages in one transaction (a tool-call message and its results stay whole)."""
        if not messages:
            return
        row = {
            "session_id": session_id,
            "created_at": time.time(),
            "count": len(messages),
            "messages": json.dumps(list(messages), ensure_ascii=False),
        }
        async with self.db.engine.begin() as conn:
            await conn.execute(session_history.insert(), [row])

    async def load(self, session_id: str, max_chars: int | None = None) -> list[Message]:
        """The session's messages, oldest first; trimmed to `max_chars` when given."""
        c = session_history.c
        if max_chars:
            # Only the newest rows that can fit (twice the budget, so trimming can pick whole
            # turns) leave the database: a running total over rows newest-first.
            size = sa.func.length(c.messages)
            running = sa.func.sum(size).over(order_by=c.id.desc())
            sub = (
                sa.select(c.id, c.messages, (running - size).label("before"))
                .where(c.session_id == session_id)
                .subquery()
            )
            query = (
                sa.select(sub.c.messages).where(sub.c.before <= 2 * max_chars).order_by(sub.c.id)
            )
        else:
            query = sa.select(c.messages).where(c.session_id == session_id).order_by(c.id)
        async with self.db.read() as conn:
            rows = (await conn.execute(query)).scalars().all()
        messages = repair([m for r in rows for m in json.loads(r)])
        return trim(messages, max_chars) if max_chars else messages

    async def exists(self, session_id: str) -> bool:
        """Whether the session has any stored message."""
        c = session_history.c
        query = sa.select(c.id).where(c.session_id == session_id).limit(1)
        async with self.db.read() as conn:
            return (await conn.execute(query)).first() is not None

    async def delete_since(self, session_id: str, since: float) -> None:
        """Delete what a session stored from `since` (unix seconds) on: a recalled turn."""
        c = session_history.c
        async with self.db.engine.begin() as conn:
            await conn.execute(
                session_history.delete().where(c.session_id == session_id, c.created_at >= since)
            )

    async def clear(self, session_id: str) -> None:
        """Delete a session's history."""
        async with self.db.engine.begin() as conn:
            await conn.execute(
                session_history.delete().where(session_history.c.session_id == session_id)
            )

    async def list_sessions(self, prefix: str = "") -> list[SessionInfo]:
        """Sessions whose id starts with `prefix`, most recently written first."""
        c = session_history.c
        query = sa.select(c.session_id, sa.func.sum(c.count), sa.func.max(c.created_at)).group_by(
            c.session_id
        )
        if prefix:
            query = query.where(c.session_id.startswith(prefix, autoescape=True))
        async with self.db.read() as conn:
            rows = (await conn.execute(query)).all()
        infos = [SessionInfo(r[0], int(r[1]), float(r[2])) for r in rows]
        return sorted(infos, key=lambda i: i.updated_at, reverse=True)

    async def turns(self, session_id: str, limit: int = 50) -> list[tuple[float, list[Message]]]:
        """The newest `limit` appends (one per turn) as (unix time, messages), oldest first."""
        c = session_history.c
        query = (
            sa.select(c.created_at, c.messages)
            .where(c.session_id == session_id)
            .order_by(c.id.desc())
            .limit(limit)
        )
        async with self.db.read() as conn:
            rows = (await conn.execute(query)).all()
        return [(float(r[0]), json.loads(r[1])) for r in reversed(rows)]

    async def first_rows(self, session_ids: Sequence[str]) -> dict[str, list[Message]]:
        """Each session's first append (e.g. for `session_title`), in one query."""
        if not session_ids:
            return {}
        c = session_history.c
        first = (
            sa.select(sa.func.min(c.id))
            .where(c.session_id.in_(list(session_ids)))
            .group_by(c.session_id)
        )
        query = sa.select(c.session_id, c.messages).where(c.id.in_(first.scalar_subquery()))
        async with self.db.read() as conn:
            rows = (await conn.execute(query)).all()
        return {str(r[0]): json.loads(r[1]) for r in rows}


def session_title(first: list[Message], width: int = 80, more: str = "") -> str:
    """A session's title: its first user message (`first_rows`) on one line, cut to `width`
    characters, the last of them `more` when it was cut and `more` is given (e.g. "…")."""
    text = next((text_of(m.get("content")) for m in first if m.get("role") == "user"), "")
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - len(more)] + more


def _units(messages: list[Message]) -> list[list[Message]]:
    """Atomic units: an assistant tool-call message with its results, or a single message."""
    units: list[list[Message]] = []
    for m in messages:
        if m.get("role") == "tool" and units and units[-1][0].get("tool_calls"):
            units[-1].append(m)
        else:
            units.append([m])
    return units


def repair(messages: list[Message]) -> list[Message]:
    """Drop tool calls missing a result and results missing their call (e.g. after a crash)."""
    out: list[Message] = []
    for unit in _units(messages):
        head = unit[0]
        if head.get("role") == "tool":
            continue
        if head.get("tool_calls"):
            wanted = {c.get("id") for c in head["tool_calls"]}
            got = {m.get("tool_call_id") for m in unit[1:]}
            if not wanted <= got:
                continue
        out.extend(unit)
    return out


def message_chars(m: Message) -> int:
    """A message's size for the history budget: its text and tool-call arguments."""
    content = m.get("content")
    if isinstance(content, str):
        size = len(content)
    elif isinstance(content, list):  # content parts: an image counts as a fixed cost
        size = len(text_of(content)) + image_count(content) * IMAGE_PART_CHARS
    else:
        size = len(json.dumps(content or ""))
    for call in m.get("tool_calls") or ():
        fn = call.get("function") or {}
        size += len(str(fn.get("name", ""))) + len(str(fn.get("arguments", ""))) + 30
    return size + 10  # role and framing


def _size(unit: list[Message]) -> int:
    return sum(message_chars(m) for m in unit)


def trim(messages: list[Message], max_chars: int) -> list[Message]:
    """Keep the newest messages within `max_chars`, never splitting a tool call from its results.

    Whole turns (a user message and what followed it) are dropped oldest first; if the newest
    remaining turn alone is too long, its oldest tool rounds are dropped but its user message kept.
    """
    turns: list[list[list[Message]]] = []
    for unit in _units(messages):
        if unit[0].get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append(unit)
    sizes = [sum(_size(u) for u in t) for t in turns]
    total = sum(sizes)
    drop = 0
    while drop < len(turns) - 1 and total > max_chars:
        total -= sizes[drop]
        drop += 1
    turns = turns[drop:]
    if turns and total > max_chars:
        turn = turns[0]
        first = 1 if turn[0][0].get("role") == "user" else 0
        while len(turn) > first + 1 and total > max_chars:
            total -= _size(turn.pop(first))
    return [m for turn in turns for unit in turn for m in unit]
