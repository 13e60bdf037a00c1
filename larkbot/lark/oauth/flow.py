"""The device flow of one person: card with link and code, polling, identity check, storing.

Polling follows RFC 8628 as Lark's own clients do: wait `interval` between polls, +5 s on
`slow_down` (at most 60 s), +1 s after a network error, stop on `access_denied` and
`expired_token` and at the code's expiry. Each flow is a task held in a set (drained on stop);
a person has at most one pending flow, a new `/auth` replaces it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from cards.lark_auth import auth_card
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.render import text_content
from larkbot.lark.oauth import texts
from larkbot.lark.oauth.accounts import Accounts, DeviceCode, OAuthError
from larkbot.lark.oauth.scopes import OFFLINE, in_words
from larkbot.logs import get_logger
from larkbot.storage.user_tokens import Pair, TokenStore
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.lark.oauth.flow")

USER_INFO = "/open-apis/authen/v1/user_info"
SLOW_DOWN = 5.0
MAX_INTERVAL = 60.0
PENDING = "authorization_pending"
COOLDOWN = 30.0  # at most one unasked-for card per person this often


class AuthFlows:
    """Starts and finishes people's device flows; sends them their card and the outcome."""

    def __init__(self, accounts: Accounts, store: TokenStore, client: LarkClient) -> None:
        self.accounts = accounts
        self.store = store
        self.client = client
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: dict[str, asyncio.Task[None]] = {}  # open_id -> its flow
        self._started: dict[str, float] = {}  # open_id -> when its last "more scopes" card went

    def pending(self, open_id: str) -> bool:
        """True while a flow of this person is waiting for their approval."""
        task = self._pending.get(open_id)
        return task is not None and not task.done()

    async def tell(self, open_id: str, text: str) -> None:
        """A text in the person's DM with the bot."""
        await self.client.send(open_id, "text", text_content(text), receive_id_type="open_id")

    async def start(self, open_id: str, scopes: list[str], lang: str, more: bool = False) -> None:
        """Ask Lark for a code, DM the person the card, poll in the background."""
        if OFFLINE not in scopes:
            scopes = [OFFLINE, *scopes]
        code = await self.accounts.device_authorization(scopes)
        minutes = max(1, int(code.expires_in // 60))
        card = auth_card(
            code.verification_uri_complete,
            code.user_code,
            minutes,
            in_words(scopes, lang),
            lang,
            more,
        )
        await self.client.send(open_id, "interactive", card, receive_id_type="open_id")
        earlier = self._pending.pop(open_id, None)
        if earlier is not None:
            earlier.cancel()  # its code is superseded by the one just sent
        task = asyncio.create_task(self._run(open_id, code, scopes, lang), name="lark-auth")
        self._pending[open_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._done)
        log.info("lark_oauth_flow_started", open_id=open_id, scopes=scopes)

    async def offer(self, open_id: str, scopes: list[str], lang: str, more: bool) -> None:
        """A tool needed the person's token (`more`: scopes it lacked): send them a card,
        unless one is pending or went out in the last COOLDOWN seconds."""
        last = self._started.get(open_id, float("-inf"))
        if self.pending(open_id) or time.monotonic() - last < COOLDOWN:
            return
        self._started[open_id] = time.monotonic()
        await self.start(open_id, scopes, lang, more=more)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        for open_id, pending in list(self._pending.items()):
            if pending is task:
                del self._pending[open_id]
        if not task.cancelled() and task.exception() is not None:
            log.warning("lark_oauth_flow_failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Cancel every pending flow (shutdown)."""
        for task in list(self._tasks):
            await cancel_and_wait(task)

    async def _run(self, open_id: str, code: DeviceCode, scopes: list[str], lang: str) -> None:
        try:
            async with asyncio.timeout(code.expires_in):
                pair = await self._poll(code)
        except TimeoutError:
            pair = None
        except OAuthError as err:
            await self.tell(open_id, texts.flow_ended(err.error, lang))
            return
        if pair is None:
            await self.tell(open_id, texts.flow_ended("expired_token", lang))
            return
        await self._finish(open_id, pair, scopes, lang)

    async def _poll(self, code: DeviceCode) -> Pair:
        interval = code.interval
        while True:
            await asyncio.sleep(interval)
            try:
                return await self.accounts.poll(code.device_code)
            except OAuthError as err:
                if err.error == PENDING:
                    continue
                if err.error == "slow_down":
                    interval = min(interval + SLOW_DOWN, MAX_INTERVAL)
                elif err.error == "network":
                    interval = min(interval + 1, MAX_INTERVAL)
                else:
                    raise

    async def _who(self, pair: Pair) -> dict[str, Any]:
        body = await self.client.transport.request("GET", USER_INFO, bearer=pair.access)
        data = body.get("data")
        return data if isinstance(data, dict) else {}

    async def _finish(self, open_id: str, pair: Pair, scopes: list[str], lang: str) -> None:
        """The identity check, then store and confirm (or discard and say why)."""
        try:
            info = await self._who(pair)
        except LarkAPIError as err:  # unverified: never stored
            log.warning("lark_oauth_identity_unknown", open_id=open_id, code=err.code)
            await self._discard(pair)
            await self.tell(open_id, texts.flow_ended(f"user_info {err.code}", lang))
            return
        if info.get("open_id") != open_id:
            log.warning("lark_oauth_identity_mismatch", open_id=open_id)
            await self._discard(pair)
            await self.tell(open_id, texts.mismatch(str(info.get("name") or ""), lang))
            return
        old = await self.store.grant(open_id)
        granted = list(pair.scopes) or sorted({*scopes, *(old.scopes if old else ())})
        pair = dataclasses.replace(pair, scopes=tuple(granted))
        name = str(info.get("name") or info.get("en_name") or open_id)
        await self.store.save(open_id, name, pair)
        log.info("lark_oauth_authorized", open_id=open_id, scopes=granted)
        await self.tell(open_id, texts.authorized(name, in_words(granted, lang), lang))

    async def _discard(self, pair: Pair) -> None:
        try:
            await self.accounts.revoke(pair.access)
        except OAuthError:
            log.info("lark_oauth_revoke_failed")  # dropped anyway: it is never stored
