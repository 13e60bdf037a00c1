"""The lease loop: take or renew the leader lock, lead or follow, and poll the store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from larkbot.logs import get_logger
from larkbot.scheduler.leader import DbLeaderLock, LeaderLock, RedisLeaderLock
from larkbot.storage.db import Database
from larkbot.tasks import cancel_and_wait


class ScheduleService(Protocol):
    """What leadership drives in the service (`service.py`): lead, follow, poll."""

    id: str

    def lead(self) -> None:
        """Became the leader: fire jobs."""
        ...

    def follow(self) -> None:
        """Lost or never had the lease: stop firing."""
        ...

    def poll(self) -> None:
        """Still the leader: pick up jobs other replicas added."""
        ...


log = get_logger(__name__)


class Leadership:
    """Every `poll_seconds`: acquire/renew the lease; the leader also re-reads the job store.

    Renewal runs much more often than the lease lasts (lease > 2 x poll), so a live leader keeps
    it; a dead one stops renewing and the next replica takes over once the lease expires. A leader
    that cannot confirm its lease within `lease - poll` seconds stops running jobs first.
    """

    def __init__(
        self, service: ScheduleService, db: Database, lease_seconds: float, poll_seconds: float
    ) -> None:
        if lease_seconds <= 2 * poll_seconds:
            raise ValueError("lease_seconds must exceed twice poll_seconds")
        self._service = service
        self._db = db
        self._lease = lease_seconds
        self._poll = poll_seconds
        self._lock: LeaderLock | None = None
        self._redis: Any = None
        self._task: asyncio.Task[None] | None = None
        self._confirmed = 0.0  # monotonic time of the last successful acquire/renew
        self.leading = False

    async def start(self, redis_url: str = "", lock: LeaderLock | None = None) -> None:
        """Pick the lock (Redis when configured, else the database), try once, then loop."""
        if lock is not None:
            self._lock = lock
        elif redis_url:
            import redis.asyncio as aioredis

            self._redis = aioredis.from_url(redis_url)
            self._lock = RedisLeaderLock(self._redis, self._service.id, self._lease)
        else:
            self._lock = DbLeaderLock(self._db, self._service.id, self._lease)
        await self.tick()
        self._task = asyncio.create_task(self._loop(), name="scheduler-leadership")

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._poll)  # a timer, not synchronisation
            await self.tick()

    async def tick(self) -> None:
        """One round: renew or take the lease, then lead, poll or step down."""
        assert self._lock is not None
        try:
            # Bounded: a hung database or Redis must not stall the loop past the lease.
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow stop()'s cancel.
            async with asyncio.timeout(self._lease - self._poll):
                held = await self._lock.acquire()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("scheduler_lease_error", exc_info=True)
            held = self.leading and time.monotonic() - self._confirmed < self._lease - self._poll
        else:
            if held:
                self._confirmed = time.monotonic()
        if held and not self.leading:
            self.leading = True
            log.info("scheduler_leader", instance=self._service.id)
            self._service.lead()
        elif held:
            self._service.poll()
        elif self.leading:
            self.leading = False
            log.warning("scheduler_lost_lease", instance=self._service.id)
            self._service.follow()

    async def stop(self, before_release: Callable[[], Awaitable[None]]) -> None:
        """Stop the loop, run `before_release` (drain), then free the lease for a successor."""
        if self._task is not None:
            await cancel_and_wait(self._task)
        await before_release()
        if self._lock is not None and self.leading:
            try:
                await self._lock.release()
            except Exception:
                log.warning("scheduler_release_failed", exc_info=True)
        self.leading = False
        if self._redis is not None:
            await self._redis.aclose()
