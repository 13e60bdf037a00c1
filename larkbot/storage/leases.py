"""Lease rows (name, holder, expires_at) in the shared database: one holder per name at a time.

The scheduler's leader lock and the per-person token refresh both take a row this way: renew it
while held, take it over once expired, or insert it the first time; times are the database's.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, or_, update
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.storage.db import Database


async def take_lease(db: Database, table: Table, name: str, holder: str, seconds: float) -> bool:
    """True when `holder` now holds `name` for `seconds` (renewed, taken over or inserted)."""
    await db.clock.sync()
    now = db.clock.now()
    t = table
    async with db.engine.begin() as conn:
        taken = await conn.execute(
            update(t)
            .where(t.c.name == name, or_(t.c.holder == holder, t.c.expires_at < now))
            .values(holder=holder, expires_at=now + seconds)
        )
        if taken.rowcount == 1:
            return True
        dialect: Any = sqlite if db.is_sqlite else postgresql
        inserted = await conn.execute(
            dialect.insert(t)
            .values(name=name, holder=holder, expires_at=now + seconds)
            .on_conflict_do_nothing()
        )
        return bool(inserted.rowcount == 1)


async def give_back_lease(db: Database, table: Table, name: str, holder: str) -> None:
    """Expire `holder`'s row for `name`, so another holder may take it at once."""
    async with db.engine.begin() as conn:
        await conn.execute(
            update(table)
            .where(table.c.name == name, table.c.holder == holder)
            .values(expires_at=0.0)
        )
