"""`UserTokens` on the Lark side: a person's valid token, refreshed once across replicas.

A token close to expiry (or one Lark refused) is refreshed by whoever takes the person's lease
(lease.py); the holder re-reads the row first, since another replica may have just refreshed it,
and writes only over the version it read. Everyone else waits and reads the new token. A refresh
token Lark refuses (expired, revoked, already used) ends the authorization: NotAuthorized.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from larkbot.lark.oauth.accounts import Accounts, OAuthError
from larkbot.lark.oauth.lease import Leases
from larkbot.logs import get_logger
from larkbot.storage.user_tokens import Grant, Pair, TokenStore
from larkbot.storage.vault import VaultMismatch
from tools.workspace.access import NotAuthorized

log = get_logger("larkbot.lark.oauth.tokens")

MARGIN = 300.0  # refresh this long before the access token expires (Lark's own clients: 5 min)
WAIT = 30.0  # how long a caller waits for another replica's refresh
POLL = 0.2
REMEMBERED = 1024  # tokens handed out, for "whose token was that?" (MissingScopes cards)
KEY_HINT = "every replica needs the same $LARKBOT_HOME/.secrets/lark_oauth.key"


def transient(err: OAuthError) -> bool:
    """No answer, Lark's own failure (5xx, 20050): the refresh token may still be good."""
    return err.error in ("network", "20050") or err.error.startswith("http_5")


class RefreshPending(Exception):
    """Another replica holds the refresh lease and has not finished within WAIT seconds."""


class LarkUserTokens:
    """Hands out each person's `u-` token; refreshes it at most once at a time, everywhere."""

    def __init__(
        self,
        store: TokenStore,
        accounts: Accounts,
        leases: Leases,
        on_unauthorized: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.store = store
        self.accounts = accounts
        self.leases = leases
        self.on_unauthorized = on_unauthorized  # sends the person the /auth card
        self._locks: dict[str, asyncio.Lock] = {}
        self._rejected: dict[str, str] = {}  # open_id -> the access token Lark refused
        self._whose: OrderedDict[str, str] = OrderedDict()  # token -> open_id
        # open_id -> its refresh, shielded from callers (the lease is ours while it runs)
        self._inflight: dict[str, asyncio.Task[str]] = {}

    def whose(self, token: str) -> str:
        """The open_id a token handed out here belongs to ("" when unknown)."""
        return self._whose.get(token, "")

    def _hand_out(self, open_id: str, token: str) -> str:
        self._whose[token] = open_id
        self._whose.move_to_end(token)
        while len(self._whose) > REMEMBERED:
            self._whose.popitem(last=False)
        return token

    def _fresh(self, open_id: str, grant: Grant, pair: Pair) -> bool:
        live = self.store.db.clock.now() < grant.access_expires_at - MARGIN
        return live and pair.access != self._rejected.get(open_id)

    async def _read(self, open_id: str) -> tuple[Grant, Pair]:
        try:
            got = await self.store.tokens(open_id)
        except VaultMismatch:
            log.warning("lark_oauth_key_mismatch", open_id=open_id, hint=KEY_HINT)
            raise NotAuthorized("your authorization cannot be read here; send /auth") from None
        if got is None:
            raise NotAuthorized("you have not authorized the bot; send /auth")
        return got

    async def token_for(self, open_id: str) -> str:
        """A valid `u-` token of `open_id`; NotAuthorized when there is none (any more), and
        then the person is sent the `/auth` card."""
        try:
            return await self._token_for(open_id)
        except NotAuthorized:
            if self.on_unauthorized is not None:
                await self.on_unauthorized(open_id)
            raise

    async def _token_for(self, open_id: str) -> str:
        grant, pair = await self._read(open_id)
        if self._fresh(open_id, grant, pair):
            return self._hand_out(open_id, pair.access)
        lock = self._locks.setdefault(open_id, asyncio.Lock())
        async with lock:  # one refresher per process; replicas meet at the lease
            return self._hand_out(open_id, await self._refresh(open_id))

    async def invalidate(self, open_id: str, token: str) -> None:
        """Lark refused `token`: refresh before it is handed out again."""
        self._rejected[open_id] = token

    async def _refresh(self, open_id: str) -> str:
        key = f"{self.store.app_id}:{open_id}"
        deadline = time.monotonic() + WAIT
        while True:
            running = self._inflight.get(open_id)
            if running is not None:  # its caller was cancelled; it goes on: wait for it
                return await asyncio.shield(running)
            grant, pair = await self._read(open_id)
            if self._fresh(open_id, grant, pair):
                return pair.access  # refreshed meanwhile (here or on another replica)
            if not pair.refresh or grant.refresh_expires_at <= self.store.db.clock.now():
                await self.store.delete(open_id, grant.version)
                raise NotAuthorized("your authorization expired; send /auth again")
            if await self.leases.take(key):
                # finished even if the caller is cancelled: a refresh whose answer is lost may
                # have spent the single-use refresh token, and its new pair must be kept
                task = asyncio.create_task(self._held(open_id, key), name="lark-token-refresh")
                self._inflight[open_id] = task
                task.add_done_callback(functools.partial(self._settled, open_id))
                return await asyncio.shield(task)
            if time.monotonic() > deadline:
                raise RefreshPending(f"another replica is still refreshing {open_id}'s token")
            await asyncio.sleep(POLL)

    def _settled(self, open_id: str, task: asyncio.Task[str]) -> None:
        if self._inflight.get(open_id) is task:
            del self._inflight[open_id]
        if not task.cancelled():
            task.exception()  # seen: the caller (if still there) got it raised

    async def _held(self, open_id: str, key: str) -> str:
        try:
            return await self._refresh_held(open_id)
        finally:
            await self.leases.give_back(key)

    async def _refresh_held(self, open_id: str) -> str:
        """With the lease: re-read (someone may have refreshed), then refresh once."""
        grant, pair = await self._read(open_id)
        if self._fresh(open_id, grant, pair):
            return pair.access
        try:
            new = await self.accounts.refresh(pair.refresh)
        except OAuthError as err:
            if transient(err):
                raise  # unknown outcome: keep the row; a spent refresh token is refused next time
            log.info("lark_oauth_refresh_refused", open_id=open_id, error=err.error)
            await self.store.delete(open_id, grant.version)
            raise NotAuthorized("your authorization ended; send /auth again") from None
        if not new.scopes:
            new = dataclasses.replace(new, scopes=grant.scopes)
        if not await self.store.rotate(open_id, grant.version, new):
            grant, pair = await self._read(open_id)  # a new /auth landed meanwhile: use it
            return pair.access
        self._rejected.pop(open_id, None)
        log.info("lark_oauth_refreshed", open_id=open_id, expires_in=new.expires_in)
        return new.access
