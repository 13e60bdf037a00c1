"""When the consolidation pass runs: once a night, on the leader replica, once per day.

Every replica keeps a timer, but only the one leading the scheduler (`leading()`) runs the
pass, and only after winning the day's row in `memory_passes`, so a leader change at the
wrong minute cannot run it twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from larkbot.logs import get_logger
from larkbot.memory.consolidate import Consolidator
from larkbot.tasks import cancel_and_wait

log = get_logger(__name__)

LOOK_BACK = 36 * 3600.0  # groups changed since the last pass (with a margin)


def seconds_until(at: str, tz: ZoneInfo, now: datetime | None = None) -> float:
    """Seconds from `now` to the next `HH:MM` in `tz`."""
    now = now or datetime.now(tz)
    hour, minute = (int(x) for x in at.split(":"))
    due = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if due <= now:
        due += timedelta(days=1)
    return (due - now).total_seconds()


class Nightly:
    """The timer task; `start()` / `stop()` by the composition root."""

    def __init__(
        self,
        consolidator: Consolidator,
        at: str,
        tz: ZoneInfo,
        leading: Callable[[], bool],
        holder: str,
    ) -> None:
        self.consolidator = consolidator
        self.at, self.tz = at, tz
        self.leading = leading
        self.holder = holder
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin waiting for the first night."""
        self._task = asyncio.create_task(self._loop(), name="memory-nightly")

    async def stop(self) -> None:
        """Cancel the timer (a pass in progress is cut short; it is redone next night)."""
        if self._task is not None:
            await cancel_and_wait(self._task)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(seconds_until(self.at, self.tz))  # a timer, not synchronisation
            await self.tick()

    async def tick(self) -> bool:
        """Run tonight's pass if this replica leads and nobody ran it today; True when it ran."""
        if not self.leading():
            return False
        day = datetime.now(self.tz).strftime("%Y-%m-%d")
        try:
            if not await self.consolidator.store.claim_pass(day, self.holder):
                return False
            reports = await self.consolidator.run(since=time.time() - LOOK_BACK)
        except Exception:
            log.warning("memory_nightly_failed", exc_info=True)
            return False
        log.info("memory_consolidated", day=day, people=len(reports))
        return True
