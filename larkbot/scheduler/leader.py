"""Leader election so exactly one replica runs the scheduler: a DB lease row or a Redis key."""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import Column, Float, String, Table

from larkbot.storage.db import Database, metadata
from larkbot.storage.leases import give_back_lease, take_lease

LOCK_NAME = "scheduler"

scheduler_leader = Table(
    "scheduler_leader",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("holder", String(128), nullable=False),
    Column("expires_at", Float, nullable=False),  # epoch seconds by the database's clock
)


class LeaderLock(Protocol):
    """A lease: `acquire` takes or renews it, `release` gives it up."""

    holder: str

    async def acquire(self) -> bool:
        """Take the lease if free or expired, renew it if ours; True when we hold it."""

    async def release(self) -> None:
        """Give the lease up if we hold it."""


class DbLeaderLock:
    """A lease row in the shared database (`scheduler_leader`), taken over after expiry.

    Times are the database's (`Database.clock`), so replicas' own clocks may disagree.
    """

    def __init__(self, db: Database, holder: str, lease_seconds: float) -> None:
        self._db = db
        self.holder = holder
        self._lease = lease_seconds
        self._created = False

    async def acquire(self) -> bool:
        """Renew our row, take over an expired one, or insert the first one."""
        if not self._created:
            await self._db.create(scheduler_leader)
            self._created = True
        return await take_lease(self._db, scheduler_leader, LOCK_NAME, self.holder, self._lease)

    async def release(self) -> None:
        """Expire our row so another replica takes over at once."""
        await give_back_lease(self._db, scheduler_leader, LOCK_NAME, self.holder)


_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class RedisLeaderLock:
    """A lease in Redis: `SET key holder NX PX`, renewed only while it still names us."""

    def __init__(self, redis: Any, holder: str, lease_seconds: float, key: str = "") -> None:
        self._redis = redis
        self.holder = holder
        self._lease_ms = int(lease_seconds * 1000)
        self._key = key or "larkbot:scheduler:leader"

    async def acquire(self) -> bool:
        """Renew if ours, else try to take it."""
        renewed = await self._redis.eval(_RENEW, 1, self._key, self.holder, self._lease_ms)
        if renewed:
            return True
        got = await self._redis.set(self._key, self.holder, nx=True, px=self._lease_ms)
        return bool(got)

    async def release(self) -> None:
        """Delete the key if it still names us."""
        await self._redis.eval(_RELEASE, 1, self._key, self.holder)
