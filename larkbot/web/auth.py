"""The web token: hashed at rest, generated once, compared in constant time; login cookies.

The token is `web.token` (`LARKBOT_WEB_TOKEN`) when set; otherwise a random one is generated at
first start, printed once and only its SHA-256 is kept (table `web_auth`, shared by replicas).
A login cookie is `<expiry>.<HMAC(token hash, expiry)>`: stateless across replicas, and
rotating the token (`larkbot web-token`) invalidates every cookie at once.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import sys
import time
from collections import deque
from collections.abc import Iterable
from typing import TextIO

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from larkbot.storage.db import Database, metadata
from larkbot.text import is_number

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
        if not is_number(expiry) or int(expiry) < (now or time.time()):
            return False
        want = await self.expected()
        return bool(want) and hmac.compare_digest(self._sign(want, expiry), sig)

    @staticmethod
    def _sign(key: str, expiry: str) -> str:
        return hmac.new(key.encode(), f"cookie:{expiry}".encode(), hashlib.sha256).hexdigest()


class LoginLimiter:
    """Wrong logins slow down the client that sends them; the right token always logs in.

    The right token is checked first and never waits: a generated token has 256 bits, so what
    a limit can protect is the server's time, not the token, and a limit that refused every
    try would lock the owner out along with whoever shares their address. Each client's first
    FREE wrong tries in a window are answered at once; every one after doubles the wait before
    the next 401 (BASE s up to MAX_DELAY s). The client is its address, or the address a
    trusted proxy forwards for (`web.trusted_proxies`): see `client`.
    """

    FREE = 5
    BASE = 0.5
    MAX_DELAY = 8.0

    def __init__(self, trusted_proxies: Iterable[str] = (), window: float = 900.0) -> None:
        self.trusted = [ipaddress.ip_network(p, strict=False) for p in trusted_proxies]
        self.window = window
        self._failures: dict[str, deque[float]] = {}

    def client(self, remote: str | None, forwarded_for: Iterable[str] = ()) -> str:
        """Who is logging in: the peer, or (from trusted proxies only) whom they forward for.

        X-Forwarded-For is read from the right: each hop a trusted proxy appended is believed,
        and the first address not a trusted proxy is the client. Anything before it was written
        by the client itself and could be anything.
        """
        peer = remote or "?"
        hops = [h.strip() for value in forwarded_for for h in value.split(",")]
        while self._trusted(peer) and hops:
            hop = hops.pop()
            if not _is_ip(hop):
                break
            peer = hop
        return peer

    def _trusted(self, address: str) -> bool:
        if not self.trusted or not _is_ip(address):
            return False
        ip = ipaddress.ip_address(address)
        return any(ip in net for net in self.trusted)

    def _recent(self, client: str, now: float) -> deque[float]:
        mine = self._failures.get(client, deque())
        while mine and now - mine[0] > self.window:
            mine.popleft()
        return mine

    def delay(self, client: str, now: float | None = None) -> float:
        """Seconds to wait before telling `client` its token was wrong (0: at once)."""
        now = time.monotonic() if now is None else now
        over = len(self._recent(client, now)) - self.FREE
        return 0.0 if over <= 0 else min(self.BASE * 2 ** (over - 1), self.MAX_DELAY)

    def failed(self, client: str, now: float | None = None) -> None:
        """Record a wrong token from `client`."""
        now = time.monotonic() if now is None else now
        self._failures[client] = self._recent(client, now)
        self._failures[client].append(now)
        if len(self._failures) > 10_000:  # bounded memory under a spray of addresses
            self._failures.pop(next(iter(self._failures)))

    def succeeded(self, client: str) -> None:
        """The right token from `client`: its wrong tries are forgiven."""
        self._failures.pop(client, None)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
