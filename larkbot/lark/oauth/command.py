"""`/auth` (`/授权`), `/auth status`, `/auth revoke` (`/取消授权`) for the person who sends it.

Only the sender sees their link, code and grant: in a group the answer goes to their DM with
the bot and the group gets one short line. A revoke needs a signed message (it could otherwise
be forged to end someone's authorization); starting a flow is safe anyway, since only the
person who approves it as the sender gets their token stored. A flow asks only for the user
scopes the app has enabled (`AppUserScopes`); the person is told which features the skipped
ones leave out, and where an admin enables them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.oauth.accounts import Accounts, OAuthError, revoke_grant
from larkbot.lark.oauth.app_scopes import AppUserScopes
from larkbot.lark.oauth.flow import AuthFlows
from larkbot.lark.oauth.scopes import OFFLINE, in_words, named, requested
from larkbot.lark.oauth.texts import lang_of, say, when
from larkbot.logs import get_logger
from larkbot.storage.user_tokens import TokenStore

log = get_logger("larkbot.lark.oauth.command")


class AuthCommand:
    """Runs `/auth [status|revoke]` for a message's sender; returns the reply for its chat."""

    def __init__(
        self,
        flows: AuthFlows,
        store: TokenStore,
        accounts: Accounts,
        is_owner: Callable[[str], Awaitable[bool]],
        settings: Callable[[], Any],
        app_scopes: AppUserScopes,
        console: str,
    ) -> None:
        self.flows = flows
        self.store = store
        self.accounts = accounts
        self.is_owner = is_owner
        self.settings = settings
        self.app_scopes = app_scopes
        self.console = console  # where an admin enables the app's scopes

    async def run(self, arg: str, msg: InboundMessage) -> str:
        """Do what the sender asked; in a group the details go to their DM."""
        lang = lang_of(msg.text)
        sub = next((w for w in arg.lower().split() if w != "zh"), "")
        who = msg.sender_open_id
        if sub == "":
            return await self._start(msg, lang)
        if sub == "status":
            text = await self._status(who, lang)
        elif sub == "revoke":
            text = await self._revoke(who, lang) if msg.signed else say("unsigned", lang)
        else:
            return say("usage", lang)
        return await self._to_sender(msg, text, lang)

    async def _to_sender(self, msg: InboundMessage, text: str, lang: str) -> str:
        """`text` as the reply in a DM; in a group, to the sender's DM and a short line here."""
        if msg.is_dm:
            return text
        await self.flows.tell(msg.sender_open_id, text)
        return say("card_sent_group", lang)

    async def _start(self, msg: InboundMessage, lang: str) -> str:
        owner = msg.signed and await self.is_owner(msg.sender_open_id)
        scopes = requested(self.settings(), owner)
        if scopes == [OFFLINE]:  # workspace off, or not open to this person
            return say("off", lang)
        split = await self.app_scopes.split(scopes)
        what = named(split.skipped, lang)
        if split.asked == [OFFLINE]:  # the app enabled none: a flow would grant nothing
            text = say("none_enabled", lang, what=what, link=self.console)
            return await self._to_sender(msg, text, lang)
        try:
            await self.flows.start(msg.sender_open_id, split.asked, lang)
        except asyncio.CancelledError:
            raise
        except (OAuthError, LarkAPIError) as err:
            log.warning("lark_oauth_start_failed", error=str(err))
            why = err.error if isinstance(err, OAuthError) else f"Lark error {err.code}"
            return say("start_failed", lang, why=why)
        if not split.skipped:
            return say("card_sent_dm" if msg.is_dm else "card_sent_group", lang)
        note = say("skipped", lang, what=what, link=self.console)
        if msg.is_dm:
            return say("card_sent_dm", lang) + "\n\n" + note
        return await self._to_sender(msg, note, lang)

    async def _status(self, open_id: str, lang: str) -> str:
        grant = await self.store.grant(open_id)
        if grant is None:
            return say("pending" if self.flows.pending(open_id) else "none", lang)
        what = in_words(list(grant.scopes), lang)
        return say("status", lang, name=grant.name, what=what, until=when(grant.refresh_expires_at))

    async def _revoke(self, open_id: str, lang: str) -> str:
        removed, unheard = await revoke_grant(self.store, self.accounts, open_id)
        if isinstance(unheard, OAuthError):  # a key mismatch was never logged
            log.info("lark_oauth_revoke_refused", error=unheard.error)
        return say("revoked" if removed else "nothing", lang)
