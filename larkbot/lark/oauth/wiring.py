"""Puts people's authorization together for `serve`: store, leases, tokens, API, `/auth`.

`build_oauth` registers `ToolRuntime.services["workspace"]` (a `WorkspaceAccess`) and returns
the `/auth` command; everything it starts is closed on the App's exit stack (pending flows are
cancelled before the HTTP client closes).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.shared_cache import SharedCache
from larkbot.lark.oauth.accounts import Accounts
from larkbot.lark.oauth.api import LarkWorkspaceApi
from larkbot.lark.oauth.app_scopes import AppUserScopes, console_link
from larkbot.lark.oauth.command import AuthCommand
from larkbot.lark.oauth.flow import AuthFlows
from larkbot.lark.oauth.lease import DbLeases, Leases, RedisLeases
from larkbot.lark.oauth.scopes import FEISHU_OPEN, OFFLINE, accounts_host, requested
from larkbot.lark.oauth.tokens import LarkUserTokens
from larkbot.lark.turns.commands import Auth
from larkbot.logs import get_logger
from larkbot.runtime_factory import Core
from larkbot.storage.user_tokens import TokenStore
from larkbot.storage.vault import Vault
from tools.workspace.access import WorkspaceAccess

log = get_logger("larkbot.lark.oauth.wiring")

LEASE_SECONDS = 30.0
APP_SCOPE_KEY = "oauth_app_scope_missing:"  # + app_id; read by `larkbot doctor`
APP_SCOPE_DAYS = 7


async def _leases(core: Core, stack: AsyncExitStack) -> Leases:
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    url = core.settings.storage.redis_url
    if url:
        import redis.asyncio as aioredis

        redis = aioredis.from_url(url)
        stack.push_async_callback(redis.aclose)
        return RedisLeases(redis, holder, LEASE_SECONDS)
    leases = DbLeases(core.db, holder, LEASE_SECONDS)
    await leases.init()
    return leases


async def build_oauth(
    core: Core,
    client: LarkClient | None,
    is_owner: Callable[[str], Awaitable[bool]],
    stack: AsyncExitStack,
) -> Auth | None:
    """`/auth`'s handler (AuthCommand.run), with the workspace service registered; None
    without Lark credentials."""
    s = core.settings
    if client is None:
        return None
    store = TokenStore(core.db, Vault(s.secrets_dir), s.lark.app_id)
    await store.init()
    secret = s.lark.app_secret.get_secret_value()
    accounts = Accounts(core.http, accounts_host(s.lark), s.lark.app_id, secret)
    flows = AuthFlows(accounts, store, client)
    stack.push_async_callback(flows.drain)
    lang = "zh" if s.lark.domain.rstrip("/") == FEISHU_OPEN else "en"

    async def offer(open_id: str, scopes: list[str], more: bool = True) -> None:
        try:
            await flows.offer(open_id, scopes, lang, more)
        except Exception:  # the tool's own error result says what is missing anyway
            log.warning("lark_oauth_offer_failed", open_id=open_id, exc_info=True)

    app_scopes = AppUserScopes(client, s.lark.app_id)

    async def invite(open_id: str) -> None:  # a tool needed their token: send the card
        scopes = requested(core.live.get(), await is_owner(open_id))
        if scopes != [OFFLINE]:  # only what the app enabled, as `/auth` asks
            scopes = (await app_scopes.split(scopes)).asked
            if scopes == [OFFLINE]:
                return  # the app enabled none; the tool's error says what is missing
        await offer(open_id, scopes, more=False)

    tokens = LarkUserTokens(store, accounts, await _leases(core, stack), invite)
    cache = SharedCache(core.db)
    await cache.init()

    async def app_scope(scopes: list[str], msg: str) -> None:
        until = time.time() + APP_SCOPE_DAYS * 86400
        await cache.put(APP_SCOPE_KEY + s.lark.app_id, " ".join(scopes) or msg[:180], until)

    api = LarkWorkspaceApi(client.transport, tokens, offer, app_scope)
    core.runtime.services["workspace"] = WorkspaceAccess(tokens, api)
    console = console_link(s.lark.domain, s.lark.app_id)
    return AuthCommand(flows, store, accounts, is_owner, core.live.get, app_scopes, console).run
