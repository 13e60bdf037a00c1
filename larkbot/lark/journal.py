"""The inbound journal: claim each message_id once, with a lease, so every turn runs exactly once.

A claim is taken atomically before a turn starts and marked done once the reply is delivered.
A claim that is not done and whose lease has expired (the process died mid-turn) can be taken
again: by a redelivery of the same event, or by `reclaim_expired` at start/periodically — that
is the crash-recovery path. Entries are kept for `retention` (>= 24 h) and then purged.

Three implementations behind `InboundJournal`: `PostgresJournal` here, `SqliteJournal`
(`journal_sqlite.py`) and `RedisJournal` (`journal_redis.py`); `open_journal` picks one.
Claims sit on the webhook's ack path, so the SQL ones commit concurrent claims together.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Collection, Iterator
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncEngine

from larkbot import fast_json
from larkbot.storage.db import Database, metadata
from larkbot.storage.group_commit import GroupCommit, Settled

DAY = 24 * 3600.0
MAX_ATTEMPTS = 3  # a message whose turn crashed the process this often is given up
RENEW_BATCH = 500  # leases renewed by one statement (or one Redis script): bounded in size


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

    def claim_soon(
        self, message_id: str, payload: str, settled: Settled | None = None
    ) -> asyncio.Future[bool]:
        """`claim` started now; the future resolves once it is committed (the webhook's path).

        Its waiter may fail or cancel the future (a deadline); `settled(won or error)` still
        hears how the claim ended.
        """

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


# One statement for a whole group: new claims, and takeovers of unfinished claims whose lease ran
# out (their owner died). The group is one JSON parameter, `[{"m": id, "p": payload}, ...]`:
# two text arrays cost asyncpg four `isinstance` checks against abstract classes per claim, a
# fifth of the commit's CPU on the event loop. RETURNING names the winners.
CLAIM_GROUP = f"""
INSERT INTO lark_inbound AS t
  (message_id, status, owner, lease_until, attempts, payload, created_at, updated_at)
SELECT m, 'claimed', $2::varchar, $3::float8, 1, p, $4::float8, $4::float8
FROM json_to_recordset($1::json) AS u(m varchar, p text)
ON CONFLICT (message_id) DO UPDATE SET owner = excluded.owner,
  lease_until = excluded.lease_until, attempts = t.attempts + 1, updated_at = excluded.updated_at
WHERE t.status = 'claimed' AND t.lease_until < excluded.updated_at AND t.attempts < {MAX_ATTEMPTS}
RETURNING message_id
"""


# A burst's webhooks all run in one loop iteration, and the group's commit would wait for the last
# of them, then the loop would idle for the round trip (~250 µs, 10 % of a 16-event burst). Sent
# once this many claims are queued, the commit's round trip overlaps the rest of the iteration.
SEND_CLAIMS_AT = 8


class PostgresJournal:
    """The journal in the shared PostgreSQL database; claims are one prepared upsert per group."""

    def __init__(
        self, db: Database, lease_seconds: float = 60.0, retention_seconds: float = 1.5 * DAY
    ) -> None:
        if db.is_sqlite:
            raise ValueError("PostgresJournal needs PostgreSQL; open_journal picks SqliteJournal")
        self.db = db
        self.lease_seconds = lease_seconds
        self.retention_seconds = max(retention_seconds, DAY)
        self.owner = uuid.uuid4().hex
        self.claims = GroupCommit(self._flush_claims, "journal claim", send_at=SEND_CLAIMS_AT)
        self._conn: Any = (
            None  # the claims' own asyncpg connection, so they never queue for the pool
        )
        self._prepared: Any = None

    async def init(self) -> None:
        """Create the table; measure this host's clock against the database's."""
        await self.db.create(inbound)
        await self.db.clock.sync(force=True)

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

    async def claim(self, message_id: str, payload: str) -> bool:
        """New claim, or takeover of an expired unfinished one; committed with its group."""
        return await self.claims.submit((message_id, payload))

    def claim_soon(
        self, message_id: str, payload: str, settled: Settled | None = None
    ) -> asyncio.Future[bool]:
        """`claim`, queued for the next group commit at once."""
        return self.claims.submit_soon((message_id, payload), settled)

    async def _flush_claims(self, rows: list[tuple[str, str]]) -> list[bool]:
        firsts = dict(reversed(rows))  # the same message twice in one group: the first wins
        now = self.db.clock.now()
        try:
            if self._prepared is None:
                await asyncio.sleep(0)  # connect in the flusher's own task (see `start_now`)
                self._conn = await _connect(self.db.engine)
                self._prepared = await self._conn.prepare(CLAIM_GROUP)
            group = fast_json.dumps([{"m": m, "p": p} for m, p in firsts.items()])
            won = await self._prepared.fetch(group, self.owner, now + self.lease_seconds, now)
        except Exception:
            await self._drop_connection()  # a dead connection (server restart): open anew next time
            raise
        winners = {row[0] for row in won}
        result: list[bool] = []
        for message_id, _ in rows:
            result.append(message_id in winners)
            winners.discard(message_id)  # a later duplicate in the group lost
        return result

    async def _drop_connection(self) -> None:
        conn, self._conn, self._prepared = self._conn, None, None
        if conn is not None:
            conn.terminate()

    async def _update_own(self, message_id: str, **values: object) -> bool:
        async with self.db.engine.begin() as conn:
            res = await conn.execute(
                sa.update(inbound)
                .where(
                    inbound.c.message_id == message_id,
                    inbound.c.owner == self.owner,
                    inbound.c.status == "claimed",
                )
                .values(updated_at=self.db.clock.now(), **values)
            )
            return res.rowcount == 1

    async def renew(self, message_id: str) -> bool:
        """Push the lease forward by `lease_seconds`; False when another replica took it."""
        await self.db.clock.sync()
        return await self._update_own(
            message_id, lease_until=self.db.clock.now() + self.lease_seconds
        )

    async def renew_many(self, message_ids: Collection[str]) -> set[str]:
        """`renew` for each: one UPDATE … RETURNING per RENEW_BATCH of them (the ids as one
        array parameter, so the statement text, and its prepared plan, stay the same)."""
        await self.db.clock.sync()
        held = set[str]()
        for batch in renew_batches(message_ids):
            now = self.db.clock.now()
            async with self.db.engine.begin() as conn:
                rows = await conn.execute(
                    sa.update(inbound)
                    .where(
                        inbound.c.message_id == sa.any_(_id_array(batch)),
                        inbound.c.owner == self.owner,
                        inbound.c.status == "claimed",
                    )
                    .values(lease_until=now + self.lease_seconds, updated_at=now)
                    .returning(inbound.c.message_id)
                )
                held.update(rows.scalars())
        return held

    async def release(self, message_id: str) -> None:
        """Expire the lease now."""
        await self._update_own(message_id, lease_until=0.0)

    async def forgive_attempt(self, message_id: str) -> None:
        """One takeover fewer counted (see `InboundJournal.forgive_attempt`)."""
        async with self.db.engine.begin() as conn:
            await conn.execute(
                sa.update(inbound)
                .where(
                    inbound.c.message_id == message_id,
                    inbound.c.status == "claimed",
                    inbound.c.attempts > 1,
                )
                .values(attempts=inbound.c.attempts - 1)
            )

    async def done(self, message_id: str) -> None:
        """Mark done and drop the stored message text (it is no longer needed)."""
        async with self.db.engine.begin() as conn:
            await conn.execute(
                sa.update(inbound)
                .where(inbound.c.message_id == message_id)
                .values(status="done", payload="", updated_at=self.db.clock.now())
            )

    async def reclaim_expired(self, limit: int = 50, exclude: Collection[str] = ()) -> list[str]:
        """Atomically retake each expired unfinished claim; give up on ones tried too often."""
        await self.db.clock.sync()
        now = self.db.clock.now()
        async with self.db.read() as conn:
            rows = (
                await conn.execute(
                    sa.select(inbound.c.message_id, inbound.c.payload, inbound.c.attempts)
                    .where(inbound.c.status == "claimed", inbound.c.lease_until < now)
                    .order_by(inbound.c.created_at)
                    .limit(limit + len(exclude))
                )
            ).all()
        won: list[str] = []
        for message_id, payload, attempts in [r for r in rows if r[0] not in exclude][:limit]:
            async with self.db.engine.begin() as conn:
                if attempts >= MAX_ATTEMPTS:
                    await conn.execute(self._give_up(message_id, now))
                elif (await conn.execute(self._takeover(message_id, now))).rowcount == 1:
                    won.append(payload)
        return won

    def _give_up(self, message_id: str, now: float) -> sa.Update:
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

    async def status(self, message_id: str) -> str | None:
        """The entry's status."""
        async with self.db.read() as conn:
            return (
                await conn.execute(
                    sa.select(inbound.c.status).where(inbound.c.message_id == message_id)
                )
            ).scalar_one_or_none()

    async def purge(self) -> int:
        """Delete entries created before now - retention."""
        cutoff = self.db.clock.now() - self.retention_seconds
        async with self.db.engine.begin() as conn:
            res = await conn.execute(sa.delete(inbound).where(inbound.c.created_at < cutoff))
            return int(res.rowcount or 0)

    async def backlog(self) -> int:
        """Rows still `claimed`."""
        async with self.db.read() as conn:
            query = sa.select(sa.func.count()).where(inbound.c.status == "claimed")
            return int((await conn.execute(query)).scalar_one())

    async def close(self) -> None:
        """Stop the group commit and close the claims' connection (the Database is the App's)."""
        await self.claims.close()
        await self._drop_connection()


def _id_array(ids: list[str]) -> sa.BindParameter[Any]:
    return sa.bindparam("ids", ids, type_=ARRAY(sa.String(128)))


async def _connect(engine: AsyncEngine) -> Any:
    """A plain asyncpg connection with the engine's own connect arguments (host, TLS, …)."""
    import asyncpg

    args, kwargs = engine.dialect.create_connect_args(engine.url)
    return await asyncpg.connect(*args, **kwargs)
