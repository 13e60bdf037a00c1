"""People's Lark authorizations in the shared database, one row per (app_id, open_id).

The tokens are one sealed blob (vault.py); name, scopes and expiry stay readable so that
`/auth status`, `larkbot auth list` and the web page can list grants without opening any token.
`version` grows with every save: a refresh writes only over the version it read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sqlalchemy import (
    Column,
    ColumnElement,
    Float,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    and_,
    delete,
    select,
)
from sqlalchemy import update as sql_update

from larkbot.storage.db import Database, metadata
from larkbot.storage.vault import Vault

user_tokens = Table(
    "lark_user_tokens",
    metadata,
    Column("app_id", String(64), primary_key=True),
    Column("open_id", String(128), primary_key=True),
    Column("name", String(256), nullable=False, default=""),
    Column("scopes", Text, nullable=False, default=""),
    Column("sealed", LargeBinary, nullable=False),  # {"access", "refresh"}, AES-GCM
    Column("access_expires_at", Float, nullable=False),  # epoch s, the database's clock
    Column("refresh_expires_at", Float, nullable=False),
    Column("granted_at", Float, nullable=False),
    Column("version", Integer, nullable=False, default=1),
)


@dataclass(frozen=True)
class Grant:
    """What a person authorized, without the tokens (safe to list and show)."""

    open_id: str
    name: str
    scopes: tuple[str, ...]
    access_expires_at: float
    refresh_expires_at: float
    granted_at: float
    version: int


@dataclass(frozen=True)
class Pair:
    """An access token and its refresh token (never logged: no repr)."""

    access: str = field(repr=False)
    refresh: str = field(repr=False)
    expires_in: float = 0.0
    refresh_expires_in: float = 0.0
    scopes: tuple[str, ...] = ()


def _grant(row: object) -> Grant:
    r = row._mapping  # type: ignore[attr-defined]
    return Grant(
        r["open_id"],
        r["name"],
        tuple(r["scopes"].split()),
        r["access_expires_at"],
        r["refresh_expires_at"],
        r["granted_at"],
        r["version"],
    )


class TokenStore:
    """Grants of one Lark app (`app_id`), sealed with `vault`, in `db`."""

    def __init__(self, db: Database, vault: Vault | None, app_id: str) -> None:
        self.db = db
        self.vault = vault  # None: list and delete only (the CLI and the web page)
        self.app_id = app_id

    async def init(self) -> None:
        """Create the table if missing."""
        await self.db.create(user_tokens)

    def _aad(self, open_id: str) -> bytes:
        return f"{self.app_id}:{open_id}".encode()

    def _mine(self, open_id: str) -> ColumnElement[bool]:
        t = user_tokens
        return and_(t.c.app_id == self.app_id, t.c.open_id == open_id)

    async def grant(self, open_id: str) -> Grant | None:
        """The person's grant, or None."""
        async with self.db.read() as conn:
            row = (await conn.execute(select(user_tokens).where(self._mine(open_id)))).first()
        return _grant(row) if row is not None else None

    async def tokens(self, open_id: str) -> tuple[Grant, Pair] | None:
        """The grant and its opened tokens (VaultMismatch when sealed with another key)."""
        async with self.db.read() as conn:
            row = (await conn.execute(select(user_tokens).where(self._mine(open_id)))).first()
        if row is None:
            return None
        assert self.vault is not None, "TokenStore without a vault cannot open tokens"
        plain = json.loads(self.vault.open(row._mapping["sealed"], self._aad(open_id)))
        return _grant(row), Pair(plain["access"], plain["refresh"])

    async def all(self) -> list[Grant]:
        """Every grant of this app, by name."""
        t = user_tokens
        query = select(t).where(t.c.app_id == self.app_id).order_by(t.c.name, t.c.open_id)
        async with self.db.read() as conn:
            return [_grant(r) for r in (await conn.execute(query)).all()]

    def _values(self, open_id: str, pair: Pair) -> dict[str, object]:
        assert self.vault is not None, "TokenStore without a vault cannot seal tokens"
        now = self.db.clock.now()
        plain = json.dumps({"access": pair.access, "refresh": pair.refresh}).encode()
        refresh_in = pair.refresh_expires_in if pair.refresh else pair.expires_in
        return {
            "sealed": self.vault.seal(plain, self._aad(open_id)),
            "access_expires_at": now + pair.expires_in,
            "refresh_expires_at": now + refresh_in,
        }

    async def save(self, open_id: str, name: str, pair: Pair) -> None:
        """Store a new authorization (replacing any earlier one of this person)."""
        await self.db.clock.sync()
        values = self._values(open_id, pair)
        async with self.db.engine.begin() as conn:
            old = (await conn.execute(select(user_tokens).where(self._mine(open_id)))).first()
            await conn.execute(delete(user_tokens).where(self._mine(open_id)))
            await conn.execute(
                user_tokens.insert().values(
                    app_id=self.app_id,
                    open_id=open_id,
                    name=name,
                    scopes=" ".join(pair.scopes),
                    granted_at=self.db.clock.now(),
                    version=(old._mapping["version"] + 1) if old is not None else 1,
                    **values,
                )
            )

    async def rotate(self, open_id: str, version: int, pair: Pair) -> bool:
        """Store refreshed tokens over `version` only; False when the row moved on or is gone."""
        await self.db.clock.sync()
        values = self._values(open_id, pair)
        if pair.scopes:
            values["scopes"] = " ".join(pair.scopes)
        t = user_tokens
        async with self.db.engine.begin() as conn:
            done = await conn.execute(
                sql_update(t)
                .where(self._mine(open_id), t.c.version == version)
                .values(version=version + 1, **values)
            )
        return bool(done.rowcount == 1)

    async def delete(self, open_id: str, version: int | None = None) -> bool:
        """Forget the person's authorization (only `version` of it, when given: a newer one
        saved meanwhile stays); False when there was none."""
        query = delete(user_tokens).where(self._mine(open_id))
        if version is not None:
            query = query.where(user_tokens.c.version == version)
        async with self.db.engine.begin() as conn:
            done = await conn.execute(query)
        return bool(done.rowcount)
