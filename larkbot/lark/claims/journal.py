"""The inbound journal: claim each message_id once, with a lease, so every turn runs exactly once.

A claim is taken atomically before a turn starts and marked done once the reply is delivered.
A claim that is not done and whose lease has expired (the process died mid-turn) can be taken
again: by a redelivery of the same event, or by `reclaim_expired` at start/periodically — that
is the crash-recovery path. Entries are kept for `retention` (>= 24 h) and then purged.

Two implementations behind `InboundJournal`: `SqlJournal` here (SQLite or PostgreSQL, through
the project's SQLAlchemy layer) and `RedisJournal` (`journal_redis.py`); `open_journal` picks one.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.storage.db import Database, metadata
from larkbot.storage.group_commit import GroupCommit
from larkbot.storage.threaded import ThreadedDatabase

DAY = 24 * 3600.0
MAX_ATTEMPTS = 3  # a message whose turn crashed the process this often is given up
RENEW_BATCH = 500  # leases renewed by one statement (or one Redis script): bounded in size
JOURNAL_CONNECTIONS = 4  # PostgreSQL: the group commit beside releases, the sweep and reads


def renew_batches(message_ids: Collection[str]) -> Iterator[list[str]]:
    """`message_ids` in lists of at most RENEW_BATCH, for `renew_many`."""
    ids = list(message_ids)
    for start in range(0, len(ids), RENEW_BATCH):
        yield ids[start : start + RENEW_BATCH]


inbound = sa.Table(
    "lark_inbound",
    metadata,
    sa.Column("message_id", sa.String(128), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),  # claimed | done | failed
    sa.Column("owner", sa.String(64), nullable=False),
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, default=1),
    sa.Column("payload", sa.Text, nullable=False, default=""),
    sa.Column("created_at", sa.Float, nullable=False, index=True),
    sa.Column("updated_at", sa.Float, nullable=False),
)


class InboundJournal(Protocol):
    """Exactly-once bookkeeping of inbound messages (SQL or Redis behind one interface)."""

    lease_seconds: float

    async def init(self) -> None:
        """Create storage; idempotent."""

    async def claim(self, message_id: str, payload: str) -> bool:
        """True when this replica now owns the message (new, or an expired unfinished claim)."""

    async def renew(self, message_id: str) -> bool:
        """Extend the lease of a claim this replica holds; False when it no longer holds it."""

    async def renew_many(self, message_ids: Collection[str]) -> set[str]:
        """`renew` for many claims, one statement (one Redis call) per RENEW_BATCH of them;
        returns the ones this replica still holds, whose leases were extended."""

    async def release(self, message_id: str) -> None:
        """End the lease now (turn interrupted on shutdown) so recovery can retake it at once."""

    async def forgive_attempt(self, message_id: str) -> None:
        """The last takeover was from a holder that is alive (its lease lapsed while it was
        starved of CPU or storage): do not count it against MAX_ATTEMPTS, which is for turns
        that kill their replica. No effect once the message is done or failed."""

    async def done(self, message_id: str) -> None:
        """The reply was delivered: redeliveries are dropped from now on."""

    async def reclaim_expired(self, limit: int = 50, exclude: Collection[str] = ()) -> list[str]:
        """Take over unfinished claims whose lease expired; returns their payloads.

        `exclude`: messages whose turn runs here (their lease lapsed while this replica was
        busy; its next renewal extends it): neither taken over again nor given up on.
        """

    async def status(self, message_id: str) -> str | None:
        """claimed | done | failed, or None when unknown."""

    async def purge(self) -> int:
        """Delete entries older than the retention; returns how many."""

    async def backlog(self) -> int:
        """Messages claimed but not answered yet, across replicas (the /metrics gauge)."""

    async def close(self) -> None:
        """Release connections owned by the journal."""


def journal_path(db: Database) -> Path:
    """`larkbot.db` → `larkbot.inbound.db`, in the same directory."""
    main = Path(db.url.split(":///", 1)[1])
    return main.with_name(f"{main.stem}.inbound{main.suffix or '.db'}")


class SqlJournal:
    """`InboundJournal` in SQL: PostgreSQL's shared database, or on SQLite a file of its own.

    The journal keeps its own connections, so an ack never queues behind the turns' use of the
    App's pool, and runs each transaction whole on their threads (`ThreadedDatabase`): one
    trip from the event loop and back, where the async layer made one per driver call.

    SQLite lets one connection write at a time and a waiting writer sleeps in growing steps
    (1, 2, 5, 10 … ms): in `larkbot.db` every webhook's claim would wait behind the turns'
    history writes. So on SQLite the journal keeps `<name>.inbound.db` beside it, where
    only the journal writes, through one connection its writers queue for. Durability there is
    WAL with `synchronous=NORMAL`: a claim answered with 200 survives the process being killed,
    not a power loss before the next checkpoint.

    Concurrent writes commit together (`GroupCommit`): the claims, lease renewals and answered
    marks that arrived during the previous commit go in one transaction, a statement per kind.
    Each transaction costs a trip to the journal's threads and the database, whatever its
    size: one per write made a busy replica's claims queue for longer than Lark waits for its
    200, and a group per kind made a claim wait behind the other kinds' commits.
    """

    def __init__(
        self, db: Database, lease_seconds: float = 60.0, retention_seconds: float = 1.5 * DAY
    ) -> None:
        self.main = db
        self.path = journal_path(db) if db.is_sqlite else None
        url, connections = (
            (f"sqlite:///{self.path}", 1) if self.path else (db.url, JOURNAL_CONNECTIONS)
        )
        self.db = ThreadedDatabase(url, connections, "journal")
        self.clock = db.clock  # leases in the App's storage time (approvals' and leader's too)
        self.lease_seconds = lease_seconds
        self.retention_seconds = max(retention_seconds, DAY)
        self.owner = uuid.uuid4().hex
        self.writes = GroupCommit(self._flush, "journal write", RENEW_BATCH)

    async def init(self) -> None:
        """Create the table; on SQLite adopt entries an earlier version kept in the main file;
        measure this host's clock against the database's."""
        await self.db.create(inbound)
        if self.path is not None:
            await self._adopt_old_table()
        await self.clock.sync(force=True)

    async def _adopt_old_table(self) -> None:
        """Move `lark_inbound` rows from `larkbot.db` here (copied first: a crash in between
        copies them again, ignored as duplicates)."""
        async with self.main.engine.begin() as conn:
            if not await conn.run_sync(lambda c: sa.inspect(c).has_table(inbound.name)):
                return
            rows = [dict(r) for r in (await conn.execute(sa.select(inbound))).mappings()]
            if rows:
                adopt = sqlite.insert(inbound).on_conflict_do_nothing()
                await self.db.write(lambda mine: mine.execute(adopt, rows))
            await conn.execute(sa.text("DROP TABLE lark_inbound"))

    async def claim(self, message_id: str, payload: str) -> bool:
        """New claim, or takeover of an expired unfinished one; committed with its group."""
        return await self.writes.submit(Write("claim", message_id, payload))

    async def _flush(self, writes: list[Write]) -> list[bool]:
        """One transaction for a group: its claims, then its renewals, then its answered marks.
        A claim waits for at most one commit ahead of it, whatever kinds that one held."""
        now = self.clock.now()
        claims = dict(reversed([(w.message_id, w.payload) for w in writes if w.kind == "claim"]))
        renewals = [w.message_id for w in writes if w.kind == "renew"]
        answered = [w.message_id for w in writes if w.kind == "done"]
        # one statement per kind, compiled once: the claims go as one multi-row VALUES
        upsert = _claim_upsert(self.db.engine.dialect.name)
        values = [self._claim_row(m, p, now) for m, p in claims.items()]
        renew = self._renewal(renewals, now)
        mark = _answered(answered, now)

        def transaction(conn: sa.Connection) -> tuple[set[str], set[str]]:
            won = set(conn.execute(upsert, values).scalars()) if values else set()
            held = set(conn.execute(renew).scalars()) if renewals else set()
            if answered:
                conn.execute(mark)
            return won, held

        won, held = await self.db.write(transaction)
        results: list[bool] = []
        for write in writes:
            if write.kind == "claim":
                results.append(write.message_id in won)
                won.discard(write.message_id)  # a later duplicate in the group lost
            else:
                results.append(write.kind == "done" or write.message_id in held)
        return results

    def _claim_row(self, message_id: str, payload: str, now: float) -> dict[str, Any]:
        return dict(
            message_id=message_id,
            status="claimed",
            owner=self.owner,
            lease_until=now + self.lease_seconds,
            attempts=1,
            payload=payload,
            created_at=now,
            updated_at=now,
        )

    async def _update_own(self, message_id: str, **values: object) -> bool:
        update = (
            sa.update(inbound)
            .where(
                inbound.c.message_id == message_id,
                inbound.c.owner == self.owner,
                inbound.c.status == "claimed",
            )
            .values(updated_at=self.clock.now(), **values)
        )
        return await self.db.write(lambda conn: conn.execute(update).rowcount == 1)

    async def renew(self, message_id: str) -> bool:
        """Push the lease forward by `lease_seconds`; False when another replica took it."""
        await self.clock.sync()
        return await self.writes.submit(Write("renew", message_id))

    async def renew_many(self, message_ids: Collection[str]) -> set[str]:
        """`renew` for each: one UPDATE … RETURNING per RENEW_BATCH of them."""
        await self.clock.sync()
        held = set[str]()
        for batch in renew_batches(message_ids):
            update = self._renewal(batch, self.clock.now())
            held |= await self.db.write(functools.partial(_returned, update))
        return held

    def _renewal(self, message_ids: list[str], now: float) -> sa.Update:
        """Leases of these claims, where this replica still holds them, to `now` + the lease."""
        return (
            sa.update(inbound)
            .where(
                inbound.c.message_id.in_(message_ids),
                inbound.c.owner == self.owner,
                inbound.c.status == "claimed",
            )
            .values(lease_until=now + self.lease_seconds, updated_at=now)
            .returning(inbound.c.message_id)
        )

    async def release(self, message_id: str) -> None:
        """Expire the lease now."""
        await self._update_own(message_id, lease_until=0.0)

    async def forgive_attempt(self, message_id: str) -> None:
        """One takeover fewer counted (see `InboundJournal.forgive_attempt`)."""
        update = (
            sa.update(inbound)
            .where(
                inbound.c.message_id == message_id,
                inbound.c.status == "claimed",
                inbound.c.attempts > 1,
            )
            .values(attempts=inbound.c.attempts - 1)
        )
        await self.db.write(lambda conn: conn.execute(update))

    async def done(self, message_id: str) -> None:
        """Mark done and drop the stored message text (it is no longer needed)."""
        await self.writes.submit(Write("done", message_id))

    async def reclaim_expired(self, limit: int = 50, exclude: Collection[str] = ()) -> list[str]:
        """Atomically retake each expired unfinished claim; give up on ones tried too often."""
        await self.clock.sync()
        now = self.clock.now()
        expired = (
            sa.select(inbound.c.message_id, inbound.c.payload, inbound.c.attempts)
            .where(inbound.c.status == "claimed", inbound.c.lease_until < now)
            .order_by(inbound.c.created_at)
            .limit(limit + len(exclude))
        )
        rows = await self.db.read(lambda conn: conn.execute(expired).all())
        won: list[str] = []
        for message_id, payload, attempts in [r for r in rows if r[0] not in exclude][:limit]:
            if attempts >= MAX_ATTEMPTS:
                await self.db.write(functools.partial(_execute, _give_up(message_id, now)))
            elif await self._take_over(message_id, now):
                won.append(payload)
        return won

    async def _take_over(self, message_id: str, now: float) -> bool:
        takeover = self._takeover(message_id, now)
        return await self.db.write(lambda conn: conn.execute(takeover).rowcount == 1)

    def _takeover(self, message_id: str, now: float) -> sa.Update:
        return (
            sa.update(inbound)
            .where(
                inbound.c.message_id == message_id,
                inbound.c.status == "claimed",
                inbound.c.lease_until < now,
                inbound.c.attempts < MAX_ATTEMPTS,
            )
            .values(
                owner=self.owner,
                lease_until=now + self.lease_seconds,
                attempts=inbound.c.attempts + 1,
                updated_at=now,
            )
        )

    async def status(self, message_id: str) -> str | None:
        """The entry's status."""
        query = sa.select(inbound.c.status).where(inbound.c.message_id == message_id)
        status: str | None = await self.db.read(
            lambda conn: conn.execute(query).scalar_one_or_none()
        )
        return status

    async def purge(self) -> int:
        """Delete entries created before now - retention."""
        cutoff = self.clock.now() - self.retention_seconds
        delete = sa.delete(inbound).where(inbound.c.created_at < cutoff)
        return await self.db.write(lambda conn: int(conn.execute(delete).rowcount or 0))

    async def backlog(self) -> int:
        """Rows still `claimed`."""
        query = sa.select(sa.func.count()).where(inbound.c.status == "claimed")
        return await self.db.read(lambda conn: int(conn.execute(query).scalar_one()))

    async def close(self) -> None:
        """Stop the group commits; close the journal's own connections (the App's are its)."""
        await self.writes.close()
        await self.db.close()


@functools.cache
def _claim_upsert(dialect: str) -> Any:
    """New claims, and takeovers of unfinished claims whose lease ran out (their owner died), in
    one statement; RETURNING names the winners."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(inbound)
    new = stmt.excluded
    return stmt.on_conflict_do_update(
        index_elements=[inbound.c.message_id],
        set_={
            "owner": new.owner,
            "lease_until": new.lease_until,
            "attempts": inbound.c.attempts + 1,
            "updated_at": new.updated_at,
        },
        where=(inbound.c.status == "claimed")
        & (inbound.c.lease_until < new.updated_at)
        & (inbound.c.attempts < MAX_ATTEMPTS),
    ).returning(inbound.c.message_id)


class Write(NamedTuple):
    """One write of a journal group commit."""

    kind: Literal["claim", "renew", "done"]
    message_id: str
    payload: str = ""  # a claim's message


def _answered(message_ids: list[str], now: float) -> sa.Update:
    """Mark answered and drop the stored message text (it is no longer needed)."""
    return (
        sa.update(inbound)
        .where(inbound.c.message_id.in_(message_ids))
        .values(status="done", payload="", updated_at=now)
    )


def _execute(statement: sa.Executable, conn: sa.Connection) -> None:
    conn.execute(statement)


def _returned(statement: sa.Executable, conn: sa.Connection) -> set[str]:
    return set(conn.execute(statement).scalars())


def _give_up(message_id: str, now: float) -> sa.Update:
    return (
        sa.update(inbound)
        .where(
            inbound.c.message_id == message_id,
            inbound.c.status == "claimed",
            inbound.c.lease_until < now,
            inbound.c.attempts >= MAX_ATTEMPTS,
        )
        .values(status="failed", payload="", updated_at=now)
    )
