"""Who owns the bot: `owner.open_ids` from config plus one owner claimed by pairing code."""

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

claimed_owner = sa.Table(
    "lark_owner",
    metadata,
    sa.Column("slot", sa.String(16), primary_key=True),  # always "owner": one claim, ever
    sa.Column("open_id", sa.String(128), nullable=False),
    sa.Column("claimed_at", sa.Float, nullable=False),
)


MAX_WRONG_CLAIMS = 5  # wrong /claim codes before the pairing code is replaced


@dataclass(frozen=True)
class ClaimResult:
    """Outcome of `/claim <code>`; `message` is what the user is told."""

    ok: bool
    message: str


class Owners:
    """Owner lookup and the one-time pairing flow (`/claim <code>` in a DM)."""

    def __init__(self, db: Database, configured: list[str]) -> None:
        self.db = db
        self.configured = frozenset(configured)
        self.claimed: str | None = None
        self.pairing_code: str | None = None
        self.wrong_guesses = 0

    async def init(self) -> None:
        """Create the table, load the claimed owner; mint a pairing code if nobody owns the bot."""
        await self.db.create(claimed_owner)
        async with self.db.engine.connect() as conn:
            self.claimed = (
                await conn.execute(sa.select(claimed_owner.c.open_id))
            ).scalar_one_or_none()
        if not self.configured and not self.claimed:
            self._mint_code()

    def _mint_code(self) -> None:
        """A fresh one-time pairing code, shown only in the operator's log."""
        self.pairing_code = f"{secrets.randbelow(10**8):08d}"
        self.wrong_guesses = 0
        log.warning(
            "owner_pairing_code",
            code=self.pairing_code,
            hint="no owner configured: send `/claim <code>` to the bot in a direct message",
        )

    def is_owner(self, open_id: str) -> bool:
        """True for configured owners and the claimed owner."""
        return bool(open_id) and (open_id in self.configured or open_id == self.claimed)

    async def check(self, open_id: str) -> bool:
        """`is_owner`, re-reading the claim while none is known (another replica may hold it)."""
        if not self.has_owner:
            async with self.db.engine.connect() as conn:
                self.claimed = (
                    await conn.execute(sa.select(claimed_owner.c.open_id))
                ).scalar_one_or_none()
            if self.claimed:
                self.pairing_code = None
        return self.is_owner(open_id)

    @property
    def has_owner(self) -> bool:
        """True once anyone owns the bot."""
        return bool(self.configured or self.claimed)

    async def claim(self, open_id: str, code: str, is_dm: bool) -> ClaimResult:
        """Make `open_id` the owner when the code matches; only the first claim ever wins."""
        if not is_dm:
            return ClaimResult(False, "Send /claim in a direct message with the bot.")
        if self.has_owner or self.pairing_code is None:
            return ClaimResult(False, "This bot already has an owner; claiming is closed.")
        if not hmac.compare_digest(code.strip().encode(), self.pairing_code.encode()):
            self.wrong_guesses += 1
            log.warning("owner_claim_refused", open_id=open_id, reason="wrong code")
            if self.wrong_guesses >= MAX_WRONG_CLAIMS:
                # Guessing 10^8 codes is slow, but not impossible: after a few misses the code
                # is burned and a new one goes to the log, which only the operator reads.
                self._mint_code()
                return ClaimResult(False, "Too many wrong codes: ask the operator for a new one.")
            return ClaimResult(False, "That pairing code is not right.")
        insert = sqlite.insert if self.db.is_sqlite else postgresql.insert
        stmt = insert(claimed_owner).values(slot="owner", open_id=open_id, claimed_at=time.time())
        async with self.db.engine.begin() as conn:
            won = (await conn.execute(stmt.on_conflict_do_nothing())).rowcount == 1
        if not won:  # another replica's claim landed first
            return ClaimResult(False, "This bot already has an owner; claiming is closed.")
        self.claimed, self.pairing_code = open_id, None
        log.info("owner_claimed", open_id=open_id)
        return ClaimResult(True, "You are now the owner of this bot.")
