"""The APScheduler job store on `storage.url` and a plain view of a stored job."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from apscheduler.job import Job
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from sqlalchemy import create_engine, event

from larkbot.errors import ConfigError
from larkbot.scheduler.delivery import fmt_time
from larkbot.scheduler.runs import RunJournal, scheduler_runs
from larkbot.scheduler.triggers import describe
from larkbot.storage.db import lock_ddl, sync_url

JOBS_TABLE = "apscheduler_jobs"


def make_jobstore(url: str, journal: RunJournal | None = None) -> SharedJobStore:
    """A SQLAlchemy job store on the database of `storage.url` (WAL + busy timeout on SQLite);
    with a `journal`, every due tick is claimed in it before the pass runs it (`runs.py`)."""
    try:
        engine = create_engine(sync_url(url), pool_pre_ping=not url.startswith("sqlite"))
    except ModuleNotFoundError as err:
        raise ConfigError(
            f"storage.url: the scheduler needs a synchronous driver ({err.name}); "
            "install larkbot[postgres]"
        ) from None
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    if journal is not None:
        journal.sync_engine = engine
    return SharedJobStore(journal, engine=engine, tablename=JOBS_TABLE)


class Passes:
    """The scheduler thread's wakeup passes as the loop sees them: whether one is under way,
    how many ended and the longest (what it would have held the loop for, had it run there)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._began = 0.0  # perf_counter of the pass under way, 0 when none
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.count = 0
        self.longest_seconds = 0.0

    def began(self) -> None:
        """A pass opened (scheduler thread)."""
        with self._lock:
            self._began = time.perf_counter()

    def ended(self) -> None:
        """The pass closed (scheduler thread): wake whoever waits for it."""
        with self._lock:
            if not self._began:
                return
            took = time.perf_counter() - self._began
            self._began, self.count = 0.0, self.count + 1
            self.longest_seconds = max(self.longest_seconds, took)
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_wake, future)

    async def settled(self) -> None:
        """Return once no pass is under way (a pass in flight may still start runs)."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                if not self._began:
                    return
                future = loop.create_future()
                self._waiters.append((loop, future))
            await future


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class SharedJobStore(SQLAlchemyJobStore):
    """APScheduler's store, creating its tables under the DDL lock (replicas start together)
    and claiming the due ticks before the wakeup pass starts them and moves the jobs on.

    A pass opens with the store's `get_due_jobs` and closes with its `get_next_run_time` (the
    two calls the scheduler makes of every store in each pass): `passes` follows them."""

    def __init__(self, journal: RunJournal | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._journal = journal
        self.tables_created = False
        self.passes = Passes()
        self._closing = False

    def create_tables(self) -> None:
        """Create the tables if missing, serialised across replicas (blocking: call in a thread)."""
        with self.engine.begin() as conn:
            lock_ddl(conn)
            self.jobs_t.create(conn, checkfirst=True)
            scheduler_runs.create(conn, checkfirst=True)
        self.tables_created = True

    def start(self, scheduler: Any, alias: str) -> None:
        """Start as usual, the tables created first unless `create_tables` already did."""
        if not self.tables_created:
            self.create_tables()
        super().start(scheduler, alias)

    def close_passes(self) -> None:
        """No due jobs from now on: `BackgroundScheduler`'s thread runs one more pass after
        `shutdown` wakes it (its loop checks for the stopped state only after the pass), and
        that pass must not fire, nor move on, anything."""
        self._closing = True

    def get_due_jobs(self, now: datetime) -> list[Job]:
        """The due jobs, their ticks claimed first (a failed claim fails the pass: retried)."""
        if self._closing:
            return []
        self.passes.began()
        try:
            jobs: list[Job] = super().get_due_jobs(now)
            if self._journal is not None and jobs:
                self._journal.claim_due(jobs, now)
        except BaseException:
            self.passes.ended()  # the scheduler skips the rest of this pass and retries later
            raise
        return jobs

    def update_job(self, job: Job) -> None:
        """Store a fired job's next run; a failure (a locked or lost database) ends the pass,
        which APScheduler then abandons before it asks for the next run time."""
        try:
            super().update_job(job)
        except BaseException:
            self.passes.ended()
            raise

    def remove_job(self, job_id: str) -> None:
        """Remove a job (its last run fired); a failure ends the pass, as for `update_job`."""
        try:
            super().remove_job(job_id)
        except BaseException:
            self.passes.ended()
            raise

    def get_next_run_time(self) -> datetime | None:
        """The earliest next run time; the pass that asks is done with this store."""
        try:
            return super().get_next_run_time()  # type: ignore[no-any-return]
        finally:
            self.passes.ended()


def _sqlite_pragmas(dbapi_conn: Any, _: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.execute("PRAGMA synchronous=NORMAL")  # as db.py: WAL makes this crash-safe, and fast
    cur.close()


@dataclass(frozen=True)
class JobInfo:
    """A stored job as users and operators see it."""

    id: str
    prompt: str
    schedule: str  # the cron text or "every N min" as created
    trigger_words: str
    next_run_time: datetime | None
    target: dict[str, str]
    creator: dict[str, Any]
    timezone: str
    trigger_words_en: str = ""  # the same in English (the CLI, `larkbot chat`)

    @classmethod
    def from_job(cls, job: Job) -> JobInfo:
        """Read the plain-data kwargs the job was created with."""
        kw = job.kwargs
        return cls(
            id=job.id,
            prompt=str(kw.get("prompt", "")),
            schedule=job.name,
            trigger_words=describe(job.trigger, job.name),
            next_run_time=job.next_run_time,
            target=dict(kw.get("target") or {}),
            creator=dict(kw.get("creator") or {}),
            timezone=str(kw.get("timezone", "")),
            trigger_words_en=describe(job.trigger, job.name, lang="en"),
        )

    def words(self, lang: str = "zh") -> str:
        """The schedule in words for these readers: "zh" (Lark's) or "en"."""
        english = lang == "en" and self.trigger_words_en
        return self.trigger_words_en if english else self.trigger_words

    def where(self) -> str:
        """The delivery target in words."""
        chat = self.target.get("chat_id")
        urgent = " (urgent)" if self.target.get("urgent") == "true" else ""
        return (
            f"chat {chat}{urgent}" if chat else f"{self.target.get('channel', 'cli')} (logged only)"
        )

    def line(self, tz: tzinfo, lang: str = "zh") -> str:
        """One line for `schedule_list` and `larkbot jobs list`."""
        words = self.words(lang)
        if words != self.schedule:
            words = f"{words} ({self.schedule})"
        return (
            f"- {self.id}: {words} · next {fmt_time(self.next_run_time, tz)} · "
            f"{self.where()} · prompt: {self.prompt[:120]}"
        )

    def details(self, tz: tzinfo, lang: str = "en") -> str:
        """Every field, for `larkbot jobs show`."""
        return "\n".join(
            [
                f"id:        {self.id}",
                f"schedule:  {self.words(lang)} ({self.schedule})",
                f"next run:  {fmt_time(self.next_run_time, tz)}",
                f"target:    {self.where()} thread={self.target.get('thread_id') or '-'}",
                f"creator:   {self.creator.get('open_id', '?')} "
                f"(owner at creation: {self.creator.get('is_owner')})",
                f"timezone:  {self.timezone}",
                f"session:   schedule:{self.id}",
                f"prompt:    {self.prompt}",
            ]
        )
