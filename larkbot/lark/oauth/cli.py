"""`larkbot auth list | revoke OPEN_ID`: whose Lark authorizations the bot holds; end one.

Lists names, scopes and expiry from the shared database, never a token. `revoke` asks Lark to
end the grant too when this host has the key that opens it, and deletes it either way.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import httpx

from larkbot.config import Settings
from larkbot.lark.oauth.accounts import Accounts, revoke_grant
from larkbot.lark.oauth.scopes import OFFLINE, accounts_host
from larkbot.lark.oauth.texts import when
from larkbot.logs import configure_logging
from larkbot.storage.db import Database
from larkbot.storage.user_tokens import Grant, TokenStore
from larkbot.storage.vault import Vault


def run_auth(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot auth`; returns the exit code."""
    if args.action == "revoke" and not (args.open_id or "").startswith("ou_"):
        print("larkbot auth revoke: give the person's open_id (ou_…)", file=sys.stderr)
        return 2
    configure_logging("error")
    return asyncio.run(_run(settings, args.action, args.open_id or ""))


def line(grant: Grant) -> str:
    """One person's authorization as a line of text (no token)."""
    scopes = " ".join(s for s in grant.scopes if s != OFFLINE) or "-"
    return (
        f"{grant.open_id}  {grant.name}  scopes: {scopes}  "
        f"token until {when(grant.access_expires_at)}, renewable until "
        f"{when(grant.refresh_expires_at)}"
    )


async def _run(settings: Settings, action: str, open_id: str) -> int:
    db = Database(settings.storage.url)
    try:
        vault = Vault(settings.secrets_dir)
        store = TokenStore(db, vault if vault.path.exists() else None, settings.lark.app_id)
        await store.init()
        if action == "list":
            grants = await store.all()
            if not grants:
                print("Nobody has authorized the bot yet (people send /auth to it).")
            for grant in grants:
                print(line(grant))
            return 0
        return await _revoke(settings, store, open_id)
    finally:
        await db.close()


async def _revoke(settings: Settings, store: TokenStore, open_id: str) -> int:
    if await store.grant(open_id) is None:
        print(f"{open_id} has no authorization (see `larkbot auth list`).", file=sys.stderr)
        return 1
    lark = settings.lark
    async with httpx.AsyncClient() as http:
        accounts = Accounts(
            http, accounts_host(lark), lark.app_id, lark.app_secret.get_secret_value()
        )
        _, unheard = await revoke_grant(store, accounts, open_id)
    if unheard is not None:
        print(f"note: Lark was not told ({unheard}); the bot's copy is removed anyway.")
    print(f"{open_id}'s authorization is removed; the bot can no longer act as them.")
    return 0
