"""The web token: hashed at rest, generated once, compared in constant time; login cookies.

The token is `web.token` (`LARKBOT_WEB_TOKEN`) when set; otherwise a random one is generated at
first start, printed once and only its SHA-256 is kept (table `web_auth`, shared by replicas).
A login cookie is `<expiry>.<HMAC(token hash, expiry)>`: stateless across replicas, and
rotating the token (`larkbot web-token`) invalidates every cookie at once.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sys
import time
from collections import deque
from typing import TextIO

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from larkbot.storage.db import Database, metadata

TOKEN_KEY = "token_sha256"
COOKIE_NAME = "larkbot_session"
COOKIE_SECONDS = 30 * 24 * 3600
CACHE_SECONDS = 2.0  # a rotated token takes effect on every replica within this

web_auth = sa.Table(
    "web_auth",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(255), nullable=False),
)


def digest(token: str) -> str:
    """The hex SHA-256 of a token (what is stored and compared)."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh random web token."""
    return secrets.token_urlsafe(32)


class WebAuth:
    """Checks bearer tokens and login cookies against the one web token."""

    def __init__(self, db: Database, configured: str = "", out: TextIO | None = None) -> None:
        self.db = db
        self.configured = configured
        self._out = out
        self._cached: tuple[float, str] | None = None
        self.generated = ""  # the token `init` just generated (for serve's start screen)

    async def init(self) -> None:
        """Create the table; without a configured token, generate one at first start."""
        await self.db.create(web_auth)
        if self.configured or await self._stored():
            return
        token = new_token()
        try:
            async with self.db.engine.begin() as conn:
                await conn.execute(web_auth.insert().values(name=TOKEN_KEY, value=digest(token)))
        except IntegrityError:
            return  # another replica generated it first and printed it
        self.generated = token
        out = self._out or sys.stderr
        print(
            f"larkbot web token (shown once; `larkbot web-token` makes a new one): {token}",
            file=out,
            flush=True,
        )

    async def rotate(self) -> str:
        """Replace the stored token with a new one and return it (the old one stops working)."""
        await self.db.create(web_auth)
        token = new_token()
        async with self.db.engine.begin() as conn:
            await conn.execute(web_auth.delete().where(web_auth.c.name == TOKEN_KEY))
            await conn.execute(web_auth.insert().values(name=TOKEN_KEY, value=digest(token)))
        self._cached = None
        return token

    async def _stored(self) -> str:
        async with self.db.read() as conn:
            row = await conn.execute(
                sa.select(web_auth.c.value).where(web_auth.c.name == TOKEN_KEY)
            )
            return str(row.scalar() or "")

    async def expected(self) -> str:
        """The current token's hash ('' when none exists yet: nothing is accepted)."""
        if self.configured:
            return digest(self.configured)
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] > CACHE_SECONDS:
            self._cached = (now, await self._stored())
        return self._cached[1]

    async def token_ok(self, token: str) -> bool:
        """Constant-time check of a presented token."""
        want = await self.expected()
        return bool(want) and bool(token) and hmac.compare_digest(digest(token), want)

    async def make_cookie(self, now: float | None = None) -> str:
        """A login cookie value valid for COOKIE_SECONDS."""
        expiry = str(int((now or time.time()) + COOKIE_SECONDS))
        return f"{expiry}.{self._sign(await self.expected(), expiry)}"

    async def cookie_ok(self, value: str, now: float | None = None) -> bool:
        """True for an unexpired cookie signed with the current token."""
        expiry, _, sig = value.partition(".")
        if not expiry.isdigit() or int(expiry) < (now or time.time()):
            return False
        want = await self.expected()
        return bool(want) and hmac.compare_digest(self._sign(want, expiry), sig)

    @staticmethod
    def _sign(key: str, expiry: str) -> str:
        return hmac.new(key.encode(), f"cookie:{expiry}".encode(), hashlib.sha256).hexdigest()


class LoginLimiter:
    """Failed logins per client address: at most `per_client` a minute, `overall` in total."""

    def __init__(self, per_client: int = 5, overall: int = 30, window: float = 60.0) -> None:
        self.per_client = per_client
        self.overall = overall
        self.window = window
        self._failures: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()

    def _trim(self, q: deque[float], now: float) -> None:
        while q and now - q[0] > self.window:
            q.popleft()

    def retry_after(self, client: str, now: float | None = None) -> float:
        """Seconds until `client` may try again (0: now)."""
        now = time.monotonic() if now is None else now
        mine = self._failures.get(client, deque())
        self._trim(mine, now)
        self._trim(self._all, now)
        if len(mine) >= self.per_client:
            return self.window - (now - mine[0])
        if len(self._all) >= self.overall:
            return self.window - (now - self._all[0])
        return 0.0

    def failed(self, client: str, now: float | None = None) -> None:
        """Record a wrong token from `client`."""
        now = time.monotonic() if now is None else now
        self._failures.setdefault(client, deque()).append(now)
        self._all.append(now)
        if len(self._failures) > 10_000:  # bounded memory under a spray of addresses
            self._failures.pop(next(iter(self._failures)))
