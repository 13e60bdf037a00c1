"""Wall time as the shared storage tells it, so replicas whose clocks disagree agree on leases.

A lease is written by one replica and compared by another: a journal claim's `lease_until`, an
approval's `expires_at`, the scheduler's leader row. With each replica's own clock, one that
runs minutes ahead takes over live claims and writes leases that outlive it by minutes; one
behind keeps a dead replica's claims alive. So those times come from `StorageClock.now()`:
this host's clock plus its offset from the storage's clock (PostgreSQL `clock_timestamp()`,
Redis `TIME`), measured with one query at start and again when it is older than a minute, in
calls that wait for the storage anyway. SQLite is one host's file: no offset to measure.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from larkbot.logs import get_logger

log = get_logger("larkbot.storage.clock")
REFRESH_SECONDS = 60.0
WARN_SKEW_SECONDS = 2.0  # worth telling the operator: NTP is not keeping this host in time


class StorageClock:
    """`now()`: epoch seconds by the storage's clock (this host's, corrected by `sync`)."""

    def __init__(
        self,
        read: Callable[[], Awaitable[float]] | None = None,
        local: Callable[[], float] = time.time,  # the seam a test skews
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self.read = read  # the storage's epoch seconds; None: this host's clock is the truth
        self.local = local
        self.refresh_seconds = refresh_seconds
        self.offset = 0.0  # storage minus local, seconds
        self._synced_at = float("-inf")  # time.monotonic() of the last measurement
        self._warned = False

    def now(self) -> float:
        """The storage's idea of now, without a round trip."""
        return self.local() + self.offset

    async def sync(self, force: bool = False) -> None:
        """Measure the offset again when it is stale (or `force`); storage trouble keeps the
        last one (the caller's own query reports the outage)."""
        if self.read is None:
            return
        if not force and time.monotonic() - self._synced_at < self.refresh_seconds:
            return
        before = self.local()
        try:
            server = await self.read()
        except Exception:
            log.warning("storage_clock_read_failed", exc_info=True)
            return
        after = self.local()
        self.offset = server - (before + after) / 2  # the reading is taken mid-round-trip
        self._synced_at = time.monotonic()
        if abs(self.offset) > WARN_SKEW_SECONDS and not self._warned:
            self._warned = True
            log.warning(
                "storage_clock_skew",
                seconds=round(self.offset, 3),
                hint="this host's clock differs from the database's: leases use the "
                "database's; keep NTP running on every replica",
            )
