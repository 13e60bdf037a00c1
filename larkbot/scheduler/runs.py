"""Each scheduled run's durable record: claimed before it starts, leased while it runs, done once
its result was delivered. So a run in flight on a replica that died is run again, once, late.

A run is one tick: (job, scheduled fire time). The leader's wakeup pass claims every due tick in
one transaction *before* it moves the jobs' next run times on (`claim_due`, in APScheduler's
thread, on the job store's synchronous engine) and starts only the ticks it won: one that another
leader claimed (two leaders overlap for a moment when a lease changes hands) or that already ran
is skipped. While runs are in flight their replica renews their leases (`renew`); once a result
was delivered the row says done (`finish`, group-committed). The leader re-takes rows whose lease
ran out and that are not done (`expired`, `retake`): their replica died mid-run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Float,
    Index,
    Integer,
    String,
    Table,
    bindparam,
    delete,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.logs import get_logger
from larkbot.storage.db import Database, metadata
from larkbot.storage.group_commit import GroupCommit

log = get_logger(__name__)
CHUNK = 400  # keys per statement: well inside SQLite's and asyncpg's bound-parameter limits
DONE_GROUP = 25  # done marks per commit: a commit resolves its runs in one loop iteration

scheduler_runs = Table(
    "scheduler_runs",
    metadata,
    Column("job_id", String(191), primary_key=True),
    Column("fire_us", BigInteger, primary_key=True),  # the scheduled fire time, epoch µs
    Column("holder", String(128), nullable=False),  # the replica running it
    Column("lease_until", Float, nullable=False),  # epoch seconds by the database's clock
    Column("attempts", Integer, nullable=False),
    Column("done_at", Float, nullable=True),  # set once the result was delivered
)
Index(
    "ix_scheduler_runs_open",
    scheduler_runs.c.lease_until,
    sqlite_where=text("done_at IS NULL"),
    postgresql_where=text("done_at IS NULL"),
)


@dataclass(frozen=True)
class RunKey:
    """One tick: a job and the fire time it was scheduled for (to the microsecond)."""

    job_id: str
    fire_us: int

    @classmethod
    def of(cls, job_id: str, fire_time: datetime) -> RunKey:
        """The key of `job_id`'s run scheduled at `fire_time`."""
        return cls(job_id, round(fire_time.timestamp() * 1_000_000))

    def fire_time(self, tz: tzinfo) -> datetime:
        """The scheduled fire time in `tz`."""
        return datetime.fromtimestamp(self.fire_us / 1_000_000, tz)


@dataclass(frozen=True)
class OpenRun:
    """A claimed run that is not done; `attempts` counts the replicas that started it."""

    key: RunKey
    lease_until: float
    attempts: int


def _claim_row(key: RunKey, holder: str, lease_until: float) -> dict[str, Any]:
    return {"job_id": key.job_id, "fire_us": key.fire_us, "holder": holder,
            "lease_until": lease_until, "attempts": 1}  # fmt: skip


def due_tick(job: Any, now: datetime) -> datetime | None:
    """The tick a due job fires for at `now`: coalesced, the latest of its run times up to now
    (from the job's next run time and its trigger, as the scheduler's pass computes them)."""
    tick = None
    when = job.next_run_time
    while when is not None and when <= now:
        tick = when
        when = job.trigger.get_next_fire_time(when, now)
    return tick  # type: ignore[no-any-return]


class RunJournal:
    """The `scheduler_runs` rows of one replica (`holder`): claim, renew, finish, re-take."""

    def __init__(self, db: Database, holder: str, lease_seconds: float) -> None:
        self._db = db
        self.holder = holder
        self.lease = lease_seconds
        self.sync_engine: Engine | None = None  # the job store's, set by make_jobstore
        self._lock = threading.Lock()  # held/won are filled by the scheduler thread
        self._held: set[RunKey] = set()  # claimed here and not finished: renewed
        self._won: set[RunKey] = set()  # claimed by the pass, not yet handed to the executor
        # small groups: a commit resolves its waiters' runs in one loop iteration (loop lag)
        self._done: GroupCommit[RunKey, None] = GroupCommit(
            self._flush_done, "scheduled run", max_group=DONE_GROUP
        )

    # The wakeup pass (scheduler thread, synchronous engine).
    def claim_due(self, jobs: list[Any], now: datetime) -> None:
        """Claim the tick each due job fires for now; remember the ones this replica won."""
        keys = [RunKey.of(job.id, tick) for job in jobs if (tick := due_tick(job, now))]
        if not keys or self.sync_engine is None:
            return
        won: set[RunKey] = set()
        until = self._db.clock.now() + self.lease
        t = scheduler_runs
        dialect: Any = sqlite if self.sync_engine.dialect.name == "sqlite" else postgresql
        with self.sync_engine.begin() as conn:
            for i in range(0, len(keys), CHUNK):
                rows = [_claim_row(k, self.holder, until) for k in keys[i : i + CHUNK]]
                stmt = dialect.insert(t).values(rows).on_conflict_do_nothing()
                got = conn.execute(stmt.returning(t.c.job_id, t.c.fire_us))
                won.update(RunKey(r.job_id, r.fire_us) for r in got)
        with self._lock:
            self._won |= won
            self._held |= won

    def take_won(self, key: RunKey) -> bool:
        """True (once) when this replica's pass claimed `key`: the executor may start it."""
        with self._lock:
            if key in self._won:
                self._won.discard(key)
                return True
            return False

    def drop(self, key: RunKey) -> None:
        """Forget a claimed tick that was not started (APScheduler skipped it: still running)."""
        with self._lock:
            self._held.discard(key)
        if self.sync_engine is not None:
            t = scheduler_runs
            with self.sync_engine.begin() as conn:
                conn.execute(delete(t).where(t.c.job_id == key.job_id, t.c.fire_us == key.fire_us))

    # On the loop.
    def hold(self, key: RunKey) -> None:
        """A re-taken run is in flight here: renew it too."""
        with self._lock:
            self._held.add(key)

    async def renew(self) -> set[RunKey]:
        """Extend the lease of every run in flight here; returns the ones this replica lost
        (another re-took them, its lease having run out under a stalled replica) or finished."""
        with self._lock:
            keys = list(self._held)
        if not keys:
            return set()
        await self._db.clock.sync()  # leases in the database's time (`storage/clock.py`)
        t, renewed = scheduler_runs, set[RunKey]()
        until = self._db.clock.now() + self.lease
        async with self._db.engine.begin() as conn:
            for i in range(0, len(keys), CHUNK):
                chunk = [(k.job_id, k.fire_us) for k in keys[i : i + CHUNK]]
                rows = await conn.execute(
                    update(t)
                    .where(t.c.holder == self.holder, t.c.done_at.is_(None))
                    .where(tuple_(t.c.job_id, t.c.fire_us).in_(chunk))
                    .values(lease_until=until)
                    .returning(t.c.job_id, t.c.fire_us)
                )
                renewed.update(RunKey(r.job_id, r.fire_us) for r in rows)
        lost = set(keys) - renewed
        with self._lock:
            self._held -= lost
        return lost

    async def finish(self, key: RunKey) -> None:
        """Mark the run done (its result was delivered); a failure is logged, and the run re-runs
        elsewhere after its lease: harmless within Lark's one-hour `uuid` dedup."""
        try:
            await self._done.submit(key)
        except Exception:
            log.warning("schedule_run_not_marked_done", job_id=key.job_id, exc_info=True)
        finally:
            with self._lock:
                self._held.discard(key)

    async def _flush_done(self, keys: list[RunKey]) -> list[None]:
        t = scheduler_runs
        stmt = (
            update(t)
            .where(t.c.job_id == bindparam("j"), t.c.fire_us == bindparam("f"))
            .where(t.c.holder == self.holder)
            .values(done_at=self._db.clock.now())
        )
        async with self._db.engine.begin() as conn:
            await conn.execute(stmt, [{"j": k.job_id, "f": k.fire_us} for k in keys])
        return [None] * len(keys)

    async def expired(self, limit: int = 100) -> list[OpenRun]:
        """Runs not done whose lease ran out (their replica died), oldest first."""
        t = scheduler_runs
        query = (
            select(t.c.job_id, t.c.fire_us, t.c.lease_until, t.c.attempts)
            .where(t.c.done_at.is_(None), t.c.lease_until < self._db.clock.now())
            .order_by(t.c.lease_until)
            .limit(limit)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).all()
        return [OpenRun(RunKey(r.job_id, r.fire_us), r.lease_until, r.attempts) for r in rows]

    async def retake(self, run: OpenRun) -> OpenRun | None:
        """Take an expired run over (first replica wins); None when another one was quicker."""
        t = scheduler_runs
        async with self._db.engine.begin() as conn:
            taken = await conn.execute(
                update(t)
                .where(t.c.job_id == run.key.job_id, t.c.fire_us == run.key.fire_us)
                .where(t.c.done_at.is_(None), t.c.lease_until == run.lease_until)
                .values(
                    holder=self.holder,
                    lease_until=self._db.clock.now() + self.lease,
                    attempts=t.c.attempts + 1,
                )
            )
        if taken.rowcount != 1:
            return None
        self.hold(run.key)
        return OpenRun(run.key, run.lease_until, run.attempts + 1)

    async def prune(self, older_than_seconds: float) -> int:
        """Delete done rows older than that (no replica fires those ticks again)."""
        t = scheduler_runs
        async with self._db.engine.begin() as conn:
            gone = await conn.execute(
                delete(t).where(t.c.done_at < self._db.clock.now() - older_than_seconds)
            )
        return gone.rowcount or 0

    async def close(self) -> None:
        """Stop the done-marking writer (marks still queued fail and are logged)."""
        await self._done.close()
