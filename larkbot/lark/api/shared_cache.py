"""Values every replica and restart may reuse until they expire: tenant token, the bot's info.

One row per key in `lark_cache` (value text, wall-clock expiry). Keys carry a digest of the
app's domain, id and secret, so a changed secret or another app never reads a stale value.
Reads and writes that fail are logged and answered as a miss: the cache saves Lark calls, it
never stops one.
"""

from __future__ import annotations

import hashlib
import time

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.logs import get_logger
from larkbot.storage.db import Database, metadata

log = get_logger("larkbot.lark.api.shared_cache")

lark_cache = sa.Table(
    "lark_cache",
    metadata,
    sa.Column("key", sa.String(200), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),  # Unix time
)


def app_key(kind: str, domain: str, app_id: str, app_secret: str) -> str:
    """`kind:<digest>` for one app's credentials (the secret itself is never stored)."""
    digest = hashlib.sha256(f"{domain}\n{app_id}\n{app_secret}".encode()).hexdigest()[:32]
    return f"{kind}:{digest}"


class SharedCache:
    """`get`/`put` of short strings with an expiry, in the shared database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def init(self) -> None:
        """Create the table."""
        await self.db.create(lark_cache)

    async def get(self, key: str) -> tuple[str, float] | None:
        """(value, expires_at) when present and unexpired, else None."""
        query = sa.select(lark_cache.c.value, lark_cache.c.expires_at).where(
            lark_cache.c.key == key, lark_cache.c.expires_at > time.time()
        )
        try:
            async with self.db.read() as conn:
                row = (await conn.execute(query)).first()
        except Exception:
            log.warning("lark_cache_read_failed", key=key.split(":")[0], exc_info=True)
            return None
        return (str(row.value), float(row.expires_at)) if row is not None else None

    async def put(self, key: str, value: str, expires_at: float) -> None:
        """Store (or replace) `key` until `expires_at` (Unix time)."""
        insert = sqlite.insert if self.db.is_sqlite else postgresql.insert
        stmt = insert(lark_cache).values(key=key, value=value, expires_at=expires_at)
        stmt = stmt.on_conflict_do_update(
            index_elements=[lark_cache.c.key],
            set_={"value": stmt.excluded.value, "expires_at": stmt.excluded.expires_at},
        )
        try:
            async with self.db.engine.begin() as conn:
                await conn.execute(stmt)
        except Exception:
            log.warning("lark_cache_write_failed", key=key.split(":")[0], exc_info=True)

    async def drop(self, key: str) -> None:
        """Forget `key` (e.g. a token Lark rejected)."""
        try:
            async with self.db.engine.begin() as conn:
                await conn.execute(lark_cache.delete().where(lark_cache.c.key == key))
        except Exception:
            log.warning("lark_cache_write_failed", key=key.split(":")[0], exc_info=True)
