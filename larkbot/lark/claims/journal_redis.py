"""The inbound journal in Redis (`storage.redis_url`): one claim per message across all replicas.

Each message is a hash `larkbot:inbound:<message_id>` (status, owner, lease_until, attempts,
payload) that expires after the retention; unfinished claims are indexed in a sorted set scored
by lease expiry so any replica can find and retake the ones whose owner died. Claim and takeover
are Lua scripts: the SET-NX-PX idea made atomic together with the pending index.
`open_journal` picks this one, or the database's journal (`journal.py`).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

import redis.asyncio as redis

from larkbot.lark.claims.journal import DAY, MAX_ATTEMPTS, InboundJournal, SqlJournal, renew_batches
from larkbot.storage.clock import StorageClock
from larkbot.storage.db import Database

PREFIX = "larkbot:inbound:"
PENDING = "larkbot:inbound-pending"

# KEYS: entry, pending. ARGV: owner, now, lease_until, payload, retention_ms, message_id, max
_CLAIM = """
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  redis.call('HSET', KEYS[1], 'status', 'claimed', 'owner', ARGV[1], 'lease_until', ARGV[3],
             'payload', ARGV[4], 'attempts', 1, 'created_at', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[6])
  return 1
end
if st ~= 'claimed' or tonumber(redis.call('HGET', KEYS[1], 'lease_until')) >= tonumber(ARGV[2]) then
  return 0
end
if tonumber(redis.call('HGET', KEYS[1], 'attempts')) >= tonumber(ARGV[7]) then
  redis.call('HSET', KEYS[1], 'status', 'failed', 'payload', '')
  redis.call('ZREM', KEYS[2], ARGV[6])
  return 0
end
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'lease_until', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[6])
return 1
"""

# KEYS: entry, pending. ARGV: owner, lease_until, message_id
_SET_LEASE = """
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1]
   and redis.call('HGET', KEYS[1], 'status') == 'claimed' then
  redis.call('HSET', KEYS[1], 'lease_until', ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
  return 1
end
return 0
"""

# KEYS: the entries, then pending. ARGV: owner, lease_until, then the message ids (as KEYS)
_RENEW_MANY = """
local renewed, pending = {}, KEYS[#KEYS]
for i = 1, #KEYS - 1 do
  local held = redis.call('HMGET', KEYS[i], 'owner', 'status')
  if held[1] == ARGV[1] and held[2] == 'claimed' then
    redis.call('HSET', KEYS[i], 'lease_until', ARGV[2])
    redis.call('ZADD', pending, ARGV[2], ARGV[i + 2])
    renewed[#renewed + 1] = ARGV[i + 2]
  end
end
return renewed
"""

# KEYS: entry
_FORGIVE = """
if redis.call('HGET', KEYS[1], 'status') == 'claimed'
   and tonumber(redis.call('HGET', KEYS[1], 'attempts') or '0') > 1 then
  redis.call('HINCRBY', KEYS[1], 'attempts', -1)
end
return 0
"""


POOL_SIZE = 100  # connections to Redis per replica
POOL_WAIT_SECONDS = 2.0  # a claim waits this long for a free one (inside Lark's 3 s)


class RedisJournal:
    """`InboundJournal` on Redis; the hash expiry is the retention (>= 24 h)."""

    def __init__(
        self, url: str, lease_seconds: float = 60.0, retention_seconds: float = 1.5 * DAY
    ) -> None:
        # redis-py's default pool refuses a command at once when its connections are all in
        # use: a burst of more than that many claims got 503s. This one waits (bounded) instead.
        pool = redis.BlockingConnectionPool.from_url(
            url, decode_responses=True, max_connections=POOL_SIZE, timeout=POOL_WAIT_SECONDS
        )
        self.redis: Any = redis.Redis.from_pool(pool)
        self.lease_seconds = lease_seconds
        self.retention_ms = int(max(retention_seconds, DAY) * 1000)
        self.owner = uuid.uuid4().hex
        self._claim = self.redis.register_script(_CLAIM)
        self._set_lease = self.redis.register_script(_SET_LEASE)
        self._renew_many = self.redis.register_script(_RENEW_MANY)
        self._forgive = self.redis.register_script(_FORGIVE)
        self.clock = StorageClock(self._server_time)  # leases in Redis's time, not this host's

    async def _server_time(self) -> float:
        seconds, micros = await self.redis.time()
        return float(seconds) + float(micros) / 1e6

    async def init(self) -> None:
        """Check the connection (fails fast with a clear error at start); read Redis's clock."""
        await self.redis.ping()
        await self.clock.sync(force=True)

    async def _try(self, message_id: str, payload: str, now: float) -> bool:
        keys = [PREFIX + message_id, PENDING]
        lease_until = now + self.lease_seconds
        args: list[str | float] = [self.owner, now, lease_until, payload, self.retention_ms]
        return bool(await self._claim(keys=keys, args=[*args, message_id, MAX_ATTEMPTS]))

    async def claim(self, message_id: str, payload: str) -> bool:
        """New claim, or takeover of an expired unfinished one."""
        return await self._try(message_id, payload, self.clock.now())

    async def renew(self, message_id: str) -> bool:
        """Push the lease forward when this replica still owns the claim; False when not."""
        await self.clock.sync()
        lease = self.clock.now() + self.lease_seconds
        return bool(
            await self._set_lease(
                keys=[PREFIX + message_id, PENDING], args=[self.owner, lease, message_id]
            )
        )

    async def renew_many(self, message_ids: Collection[str]) -> set[str]:
        """`renew` for each: one script call per RENEW_BATCH of them (one round trip, atomic)."""
        await self.clock.sync()
        held = set[str]()
        for batch in renew_batches(message_ids):
            keys = [*(PREFIX + m for m in batch), PENDING]
            lease = self.clock.now() + self.lease_seconds
            held.update(await self._renew_many(keys=keys, args=[self.owner, lease, *batch]))
        return held

    async def release(self, message_id: str) -> None:
        """Expire the lease now."""
        # Expired as of now, not at 0: the pending index is scored by lease expiry and `purge`
        # trims it below now - retention, which would drop a score of 0 (and the turn with it).
        expired = self.clock.now() - 1.0
        await self._set_lease(
            keys=[PREFIX + message_id, PENDING], args=[self.owner, expired, message_id]
        )

    async def forgive_attempt(self, message_id: str) -> None:
        """One takeover fewer counted (see `InboundJournal.forgive_attempt`)."""
        await self._forgive(keys=[PREFIX + message_id])

    async def done(self, message_id: str) -> None:
        """Mark done, drop the payload and leave the pending index."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(PREFIX + message_id, mapping={"status": "done", "payload": ""})
            pipe.pexpire(PREFIX + message_id, self.retention_ms)
            pipe.zrem(PENDING, message_id)
            await pipe.execute()

    async def reclaim_expired(self, limit: int = 50, exclude: Collection[str] = ()) -> list[str]:
        """Retake expired unfinished claims from any replica; returns their payloads."""
        await self.clock.sync()
        now = self.clock.now()
        num = limit + len(exclude)
        ids = await self.redis.zrangebyscore(PENDING, "-inf", now, start=0, num=num)
        won: list[str] = []
        for message_id in [m for m in ids if m not in exclude][:limit]:
            if not await self.redis.exists(PREFIX + message_id):
                await self.redis.zrem(PENDING, message_id)  # expired past the retention
                continue
            if await self._try(message_id, "", now):
                won.append(await self.redis.hget(PREFIX + message_id, "payload") or "")
        return won

    async def status(self, message_id: str) -> str | None:
        """The entry's status."""
        value = await self.redis.hget(PREFIX + message_id, "status")
        return str(value) if value is not None else None

    async def purge(self) -> int:
        """Entries expire by themselves; drop index members older than the retention."""
        cutoff = self.clock.now() - self.retention_ms / 1000
        return int(await self.redis.zremrangebyscore(PENDING, "-inf", cutoff))

    async def backlog(self) -> int:
        """Members of the pending index."""
        return int(await self.redis.zcard(PENDING))

    async def close(self) -> None:
        """Close the connection pool."""
        await self.redis.aclose()


def open_journal(db: Database, redis_url: str = "", lease_seconds: float = 60.0) -> InboundJournal:
    """Redis when `storage.redis_url` is set (shared by replicas), else the database's journal."""
    if redis_url:
        return RedisJournal(redis_url, lease_seconds=lease_seconds)
    return SqlJournal(db, lease_seconds=lease_seconds)
