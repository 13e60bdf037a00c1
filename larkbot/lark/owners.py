"""Who owns the bot: `owner.open_ids` from config plus owners stored in the database.

Stored owners come from `/claim <code>` (the pairing code, itself stored in the database so
every replica and every restart shows the same one until it expires or is used) and from
`larkbot owner add`. While nobody owns the bot, pairing is open; removing the last stored
owner (with none configured) opens it again.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.logs import get_logger
from larkbot.storage.db import Database, metadata

log = get_logger("larkbot.lark.owners")

owners_table = sa.Table(
    "lark_owners",
    metadata,
    sa.Column("open_id", sa.String(128), primary_key=True),
    sa.Column("source", sa.String(16), nullable=False),  # claim | cli
    sa.Column("added_at", sa.Float, nullable=False),
)
pairing_table = sa.Table(
    "lark_pairing",
    metadata,
    sa.Column("slot", sa.String(16), primary_key=True),  # always "pairing": one open code
    sa.Column("code", sa.String(16), nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("wrong_guesses", sa.Integer, nullable=False, default=0),
)
legacy_owner = sa.Table(  # before owners could be added and removed: one claimed slot
    "lark_owner",
    metadata,
    sa.Column("slot", sa.String(16), primary_key=True),
    sa.Column("open_id", sa.String(128), nullable=False),
    sa.Column("claimed_at", sa.Float, nullable=False),
)

CLAIM_HINT = (
    "no owner yet: send `/claim <code>` to the bot in a direct message, "
    "or run `larkbot owner add OPEN_ID`"
)
SETUP_HINT = (  # the code still opens: credentials set by hand and a restart show it again
    "no owner yet: `larkbot setup` connects Lark and makes whoever scans the owner "
    "(the web chat and `larkbot chat` need none)"
)
MAX_WRONG_CLAIMS = 5  # wrong /claim codes before the pairing code is replaced
PAIRING_TTL = 24 * 3600.0  # a pairing code nobody used is replaced after a day
CLOSED = "This bot already has an owner; claiming is closed."


@dataclass(frozen=True)
class ClaimResult:
    """Outcome of `/claim <code>`; `message` is what the user is told."""

    ok: bool
    message: str


@dataclass(frozen=True)
class OwnerEntry:
    """One owner as `larkbot owner list` shows it."""

    open_id: str
    source: str  # config | claim | cli


class Owners:
    """Owner lookup, `larkbot owner add/remove`, and the pairing flow (`/claim <code>`)."""

    def __init__(self, db: Database, configured: list[str], lark_connected: bool = True) -> None:
        self.db = db
        self.configured = frozenset(configured)
        self.lark_connected = lark_connected  # no app: nobody could send /claim yet
        self.pairing_code: str | None = None  # the open code as this process last saw it

    def _insert(self, table: sa.Table) -> sqlite.Insert | postgresql.Insert:
        return sqlite.insert(table) if self.db.is_sqlite else postgresql.insert(table)

    async def init(self) -> None:
        """Create the tables, carry over a legacy claim; open pairing while nobody owns the bot."""
        for table in (owners_table, pairing_table, legacy_owner):
            await self.db.create(table)
        async with self.db.engine.begin() as conn:
            legacy = (await conn.execute(sa.select(legacy_owner))).all()
            for row in legacy:
                values = {"open_id": row.open_id, "source": "claim", "added_at": row.claimed_at}
                await conn.execute(
                    self._insert(owners_table).values(**values).on_conflict_do_nothing()
                )
            if legacy:
                await conn.execute(sa.delete(legacy_owner))
        if not await self.has_owner():
            await self.open_pairing()

    async def stored(self) -> list[OwnerEntry]:
        """Owners in the database, oldest first."""
        query = sa.select(owners_table.c.open_id, owners_table.c.source).order_by(
            owners_table.c.added_at
        )
        async with self.db.read() as conn:
            return [OwnerEntry(o, s) for o, s in (await conn.execute(query)).all()]

    async def all(self) -> list[OwnerEntry]:
        """Configured owners, then stored ones."""
        configured = [OwnerEntry(o, "config") for o in sorted(self.configured)]
        return configured + [e for e in await self.stored() if e.open_id not in self.configured]

    async def has_owner(self) -> bool:
        """True once anyone owns the bot."""
        return bool(self.configured) or bool(await self.stored())

    async def check(self, open_id: str) -> bool:
        """True for configured and stored owners (read each time: `owner remove` acts at once)."""
        if not open_id:
            return False
        if open_id in self.configured:
            return True
        query = sa.select(owners_table.c.open_id).where(owners_table.c.open_id == open_id)
        async with self.db.read() as conn:
            return (await conn.execute(query)).first() is not None

    async def add(self, open_id: str, source: str = "cli") -> bool:
        """Store an owner; False when it was one already. Closes pairing."""
        stmt = self._insert(owners_table).values(
            open_id=open_id, source=source, added_at=time.time()
        )
        async with self.db.engine.begin() as conn:
            added = (await conn.execute(stmt.on_conflict_do_nothing())).rowcount == 1
            await conn.execute(sa.delete(pairing_table))
        self.pairing_code = None
        log.info("owner_added", open_id=open_id, source=source)
        return added

    async def remove(self, open_id: str) -> bool:
        """Drop a stored owner; opens pairing again when nobody is left. False when unknown."""
        async with self.db.engine.begin() as conn:
            query = sa.delete(owners_table).where(owners_table.c.open_id == open_id)
            removed = (await conn.execute(query)).rowcount == 1
        if removed:
            log.info("owner_removed", open_id=open_id)
            if not await self.has_owner():
                await self.open_pairing()
        return removed

    async def open_pairing(self) -> str:
        """The open pairing code: the stored one while valid, else a new one (logged either way)."""
        now = time.time()
        async with self.db.engine.begin() as conn:
            await conn.execute(sa.delete(pairing_table).where(pairing_table.c.expires_at <= now))
            fresh = f"{secrets.randbelow(10**8):08d}"
            row = {"slot": "pairing", "code": fresh, "expires_at": now + PAIRING_TTL}
            await conn.execute(
                self._insert(pairing_table).values(**row, wrong_guesses=0).on_conflict_do_nothing()
            )  # another replica's code wins
            code, expires = (
                await conn.execute(sa.select(pairing_table.c.code, pairing_table.c.expires_at))
            ).one()
        self.pairing_code = code
        log.warning(
            "owner_pairing_code",
            code=code,
            expires_in_hours=round((expires - now) / 3600, 1),
            hint=CLAIM_HINT if self.lark_connected else SETUP_HINT,
        )
        return str(code)

    async def claim(self, open_id: str, code: str, is_dm: bool) -> ClaimResult:
        """Make `open_id` an owner when the open pairing code matches; each code works once."""
        if not is_dm:
            return ClaimResult(False, "Send /claim in a direct message with the bot.")
        if await self.has_owner():
            return ClaimResult(False, CLOSED)
        async with self.db.read() as conn:
            row = (await conn.execute(sa.select(pairing_table))).first()
        if row is None or row.expires_at <= time.time():
            await self.open_pairing()
            return ClaimResult(
                False, "That pairing code expired: ask the operator for the new one."
            )
        if not hmac.compare_digest(code.strip().encode(), str(row.code).encode()):
            return await self._wrong_guess(open_id, str(row.code))
        async with self.db.engine.begin() as conn:
            # Deleting the code is the claim: of two replicas racing, only one deletes the row.
            used = sa.delete(pairing_table).where(pairing_table.c.code == row.code)
            if (await conn.execute(used)).rowcount != 1:
                return ClaimResult(False, CLOSED)
            stmt = self._insert(owners_table).values(
                open_id=open_id, source="claim", added_at=time.time()
            )
            await conn.execute(stmt.on_conflict_do_nothing())
        self.pairing_code = None
        log.info("owner_claimed", open_id=open_id)
        return ClaimResult(True, "You are now the owner of this bot.")

    async def _wrong_guess(self, open_id: str, current: str) -> ClaimResult:
        log.warning("owner_claim_refused", open_id=open_id, reason="wrong code")
        async with self.db.engine.begin() as conn:
            bump = (
                sa.update(pairing_table)
                .where(pairing_table.c.code == current)
                .values(wrong_guesses=pairing_table.c.wrong_guesses + 1)
                .returning(pairing_table.c.wrong_guesses)
            )
            guesses = (await conn.execute(bump)).scalar_one_or_none() or 0
            if guesses >= MAX_WRONG_CLAIMS:
                # Guessing 10^8 codes is slow, but not impossible: after a few misses the code
                # is burned and a new one goes to the log, which only the operator reads.
                await conn.execute(sa.delete(pairing_table))
        if guesses >= MAX_WRONG_CLAIMS:
            await self.open_pairing()
            return ClaimResult(False, "Too many wrong codes: ask the operator for a new one.")
        return ClaimResult(False, "That pairing code is not right.")
