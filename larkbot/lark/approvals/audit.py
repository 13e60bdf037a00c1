"""The guard's audit log: every allow/refuse decision on a Lark tool call, in the database."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa

from larkbot.logs import get_logger
from larkbot.storage.db import Database, metadata
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.lark.approvals.audit")

audit_log = sa.Table(
    "lark_audit",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("ts", sa.Float, nullable=False, index=True),
    sa.Column("sender", sa.String(128), nullable=False),
    sa.Column("chat", sa.String(128), nullable=False),
    sa.Column("tool", sa.String(128), nullable=False),
    sa.Column("args_digest", sa.String(64), nullable=False),
    sa.Column("allowed", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
)


def digest(arguments: Any) -> str:
    """sha256 of the canonical JSON of the arguments (the arguments themselves are not stored)."""
    try:
        canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        canonical = repr(arguments)
    return hashlib.sha256(canonical.encode()).hexdigest()


MAX_QUEUED = 10_000  # decisions waiting for the database; memory stays bounded
MAX_BATCH = 500


@dataclass(frozen=True)
class AuditEntry:
    """One decision."""

    ts: float
    sender: str
    chat: str
    tool: str
    args_digest: str
    allowed: bool
    reason: str


class AuditLog:
    """Buffered writer: `record` never blocks the caller; a task writes batches to the DB."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._queue: asyncio.Queue[AuditEntry] = asyncio.Queue(maxsize=MAX_QUEUED)
        self._task: asyncio.Task[None] | None = None

    async def init(self) -> None:
        """Create the table and start the writer."""
        await self.db.create(audit_log)
        if self._task is None:
            self._task = asyncio.create_task(self._writer(), name="lark-audit-writer")

    def record(
        self, sender: str, chat: str, tool: str, arguments: Any, allowed: bool, reason: str
    ) -> None:
        """Queue one decision."""
        entry = AuditEntry(time.time(), sender, chat, tool, digest(arguments), allowed, reason)
        log.info("guard_decision", sender=sender, chat=chat, tool=tool, allowed=allowed)
        try:
            self._queue.put_nowait(entry)
        except asyncio.QueueFull:  # the database is far behind: the log line above is the record
            log.warning("audit_queue_full", dropped_tool=tool, sender=sender)

    async def _write(self, batch: list[AuditEntry]) -> None:
        async with self.db.engine.begin() as conn:
            await conn.execute(sa.insert(audit_log), [asdict(e) for e in batch])

    async def _writer(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty() and len(batch) < MAX_BATCH:
                batch.append(self._queue.get_nowait())
            try:
                await self._write(batch)
            except Exception:  # the audit must not take the service down; the log keeps a trace
                log.error("audit_write_failed", count=len(batch), exc_info=True)
            finally:
                for _ in batch:
                    self._queue.task_done()

    @property
    def pending(self) -> int:
        """Decisions queued and not yet written."""
        return self._queue.qsize()

    async def flush(self) -> None:
        """Wait until every queued decision is written."""
        if self._task is not None:
            await self._queue.join()

    async def recent(self, limit: int = 100) -> list[AuditEntry]:
        """The latest decisions, newest first."""
        await self.flush()
        cols = [audit_log.c[name] for name in AuditEntry.__dataclass_fields__]
        async with self.db.read() as conn:
            rows = await conn.execute(sa.select(*cols).order_by(audit_log.c.id.desc()).limit(limit))
            return [AuditEntry(*row) for row in rows]

    async def close(self) -> None:
        """Flush (bounded) and stop the writer."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout=5)
        await cancel_and_wait(self._task)
        self._task = None
