"""Who refreshes a person's token: one short lease per person, shared by every replica.

A refresh token works once, so two replicas refreshing the same person at the same time would
end that person's authorization. The lease is a row in the shared database, or a Redis key when
`storage.redis_url` is set; its holder re-reads the stored token before refreshing.
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import Column, Float, String, Table

from larkbot.scheduler.leader import RedisLeaderLock
from larkbot.storage.db import Database, metadata
from larkbot.storage.leases import give_back_lease, take_lease

refresh_leases = Table(
    "lark_token_refresh_leases",
    metadata,
    Column("name", String(256), primary_key=True),  # app_id:open_id
    Column("holder", String(128), nullable=False),
    Column("expires_at", Float, nullable=False),  # epoch seconds by the database's clock
)


class Leases(Protocol):
    """Take and give back the refresh lease of one key."""

    async def take(self, key: str) -> bool:
        """True when this holder now has the lease of `key` (free, expired or already ours)."""
        ...

    async def give_back(self, key: str) -> None:
        """Release it if we still hold it."""
        ...


class DbLeases:
    """Lease rows in `lark_token_refresh_leases` (the scheduler's leader lock, per key)."""

    def __init__(self, db: Database, holder: str, seconds: float) -> None:
        self.db = db
        self.holder = holder
        self.seconds = seconds

    async def init(self) -> None:
        """Create the table if missing."""
        await self.db.create(refresh_leases)

    async def take(self, key: str) -> bool:
        """Take the row if free or expired; insert it the first time."""
        return await take_lease(self.db, refresh_leases, key, self.holder, self.seconds)

    async def give_back(self, key: str) -> None:
        """Expire our row so the next refresh need not wait."""
        await give_back_lease(self.db, refresh_leases, key, self.holder)


class RedisLeases:
    """One `SET NX PX` key per person in Redis."""

    def __init__(self, redis: Any, holder: str, seconds: float) -> None:
        self.redis = redis
        self.holder = holder
        self.seconds = seconds

    def _lock(self, key: str) -> RedisLeaderLock:
        return RedisLeaderLock(self.redis, self.holder, self.seconds, f"larkbot:oauth:{key}")

    async def take(self, key: str) -> bool:
        """Take the key if nobody holds it."""
        return await self._lock(key).acquire()

    async def give_back(self, key: str) -> None:
        """Delete the key if it still names us."""
        await self._lock(key).release()
