"""The Lark API call ledger: every call counted by endpoint and month, in the shared database.

`record()` is called for every HTTP attempt and never waits: it bumps an in-memory counter.
A writer task adds the pending counts to `lark_api_calls` (one upsert per endpoint, one
transaction per batch, ~0.5 s apart), then re-reads the month's total, which includes every
replica's calls. `used()` is that total plus what this replica has not written yet, so the
spending plan (`larkbot/lark/api/spending.py`) sees the whole app's month without a query.

When the month's total passes NOTICE_AT of the budget, the replica whose INSERT into
`lark_budget_notices` wins (one row per month) tells the owners, so they hear it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.logs import get_logger
from larkbot.metrics import endpoint_template
from larkbot.storage.db import Database, metadata
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.lark.api.budget")

# Feishu resets the quota "on the first day of each month"; its day is China Standard Time.
QUOTA_TZ = timezone(timedelta(hours=8))
FLUSH_DELAY = 0.5  # seconds: calls within this window go to the database in one transaction
REFRESH_EVERY = 60.0  # idle replicas still re-read the month's total (others' calls)
NOTICE_AT = 0.8

api_calls = sa.Table(
    "lark_api_calls",
    metadata,
    sa.Column("month", sa.String(7), primary_key=True),  # 2026-12
    sa.Column("endpoint", sa.String(200), primary_key=True),  # path template, ids as :id
    sa.Column("calls", sa.BigInteger, nullable=False),
)
budget_notices = sa.Table(
    "lark_budget_notices",
    metadata,
    sa.Column("month", sa.String(7), primary_key=True),
    sa.Column("at", sa.Float, nullable=False),
)

Notice = Callable[[str, int, int], Awaitable[None]]  # (month, used, budget)


def month_of(now: float | None = None) -> str:
    """The quota month of a Unix time (now by default), e.g. "2026-12"."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, QUOTA_TZ)
    return moment.strftime("%Y-%m")


def month_left(now: float | None = None) -> float:
    """The fraction of the quota month still to come (1.0 at its first instant)."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, QUOTA_TZ)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return (end - moment) / (end - start)


class CallLedger:
    """Counts calls off the hot path and knows the month's total across replicas."""

    def __init__(self, db: Database, budget: Callable[[], int], notice: Notice | None = None):
        self.db = db
        self.budget = budget  # lark.monthly_call_budget, read live (0 = unlimited)
        self.notice = notice
        self._pending: Counter[tuple[str, str]] = Counter()
        self._month = month_of()
        self._committed = 0  # the month's total in the database at the last read
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._noticed = ""  # month whose notice this replica already settled

    async def init(self) -> None:
        """Create the tables, read the month's total and start the writer."""
        await self.db.create(api_calls, budget_notices)
        await self._refresh()
        if self._task is None:
            self._task = asyncio.create_task(self._writer(), name="lark-call-ledger")

    def record(self, path: str) -> None:
        """One HTTP call to the Lark Open Platform (any outcome): counted, written later."""
        self._pending[(month_of(), endpoint_template(path))] += 1
        self._wake.set()

    def used(self) -> int:
        """This month's calls by every replica (as of the last read) plus ours not yet written."""
        month = month_of()
        pending = sum(n for (m, _), n in self._pending.items() if m == month)
        return (self._committed if month == self._month else 0) + pending

    async def by_endpoint(self, month: str | None = None) -> dict[str, int]:
        """The month's calls per endpoint template, every replica's (after writing ours)."""
        await self.flush()
        month = month or month_of()
        query = sa.select(api_calls.c.endpoint, api_calls.c.calls).where(api_calls.c.month == month)
        async with self.db.read() as conn:
            rows = (await conn.execute(query.order_by(api_calls.c.calls.desc()))).all()
        return {str(endpoint): int(calls) for endpoint, calls in rows}

    async def flush(self) -> None:
        """Write the pending counts now and re-read the total (also used at shutdown)."""
        batch, self._pending = self._pending, Counter()
        if batch:
            try:
                await self._write(batch)
            except BaseException:
                self._pending.update(batch)  # kept for the next attempt, never lost
                raise
        await self._refresh()
        await self._maybe_notice()

    async def close(self) -> None:
        """Stop the writer and write what is left (bounded)."""
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), timeout=5)

    def _upsert(self, month: str, endpoint: str, calls: int) -> sa.Executable:
        insert = sqlite.insert if self.db.is_sqlite else postgresql.insert
        stmt = insert(api_calls).values(month=month, endpoint=endpoint, calls=calls)
        return stmt.on_conflict_do_update(
            index_elements=[api_calls.c.month, api_calls.c.endpoint],
            set_={"calls": api_calls.c.calls + stmt.excluded.calls},
        )

    async def _write(self, batch: Counter[tuple[str, str]]) -> None:
        async with self.db.engine.begin() as conn:
            for (month, endpoint), calls in sorted(batch.items()):  # one lock order everywhere
                await conn.execute(self._upsert(month, endpoint, calls))

    async def _refresh(self) -> None:
        month = month_of()
        query = sa.select(sa.func.coalesce(sa.func.sum(api_calls.c.calls), 0)).where(
            api_calls.c.month == month
        )
        async with self.db.read() as conn:
            self._committed = int((await conn.execute(query)).scalar_one())
        self._month = month

    async def _maybe_notice(self) -> None:
        """The first replica to see NOTICE_AT of the budget used this month tells the owners."""
        budget, month = self.budget(), self._month
        if budget <= 0 or self._noticed == month or self._committed < NOTICE_AT * budget:
            return
        self._noticed = month
        insert = sqlite.insert if self.db.is_sqlite else postgresql.insert
        stmt = insert(budget_notices).values(month=month, at=time.time()).on_conflict_do_nothing()
        async with self.db.engine.begin() as conn:
            first = (await conn.execute(stmt)).rowcount == 1
        if not first or self.notice is None:
            return
        log.warning("lark_budget_notice", month=month, used=self._committed, budget=budget)
        try:
            await self.notice(month, self._committed, budget)
        except Exception:  # the row stays: a failed DM is logged, not repeated every flush
            log.warning("lark_budget_notice_failed", month=month, exc_info=True)

    async def _writer(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), REFRESH_EVERY)
            self._wake.clear()
            await asyncio.sleep(FLUSH_DELAY)  # gather the calls of this burst into one write
            try:
                await self.flush()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("lark_call_ledger_write_failed", exc_info=True)
                await asyncio.sleep(5.0)  # the database is down: counts wait in memory


def describe(used: int, budget: int) -> str:
    """`1,234 of 10,000 Lark API calls this month (12%)`, or without a budget."""
    if budget <= 0:
        return f"{used:,} Lark API calls this month (no monthly budget set)"
    return f"{used:,} of {budget:,} Lark API calls this month ({used / budget:.0%})"
