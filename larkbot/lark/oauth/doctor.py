"""`larkbot doctor`'s line on people's authorizations: how many, the key, app scopes missing.

A workspace call answered 99991672 (the app itself lacks a user scope) is recorded by the
serving replica (wiring.py) for a week; doctor names the scope and the console page to add it.
"""

from __future__ import annotations

from urllib.parse import quote

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.lark.api.shared_cache import SharedCache
from larkbot.lark.oauth.app_scopes import console_link
from larkbot.lark.oauth.wiring import APP_SCOPE_KEY
from larkbot.storage.db import Database
from larkbot.storage.user_tokens import TokenStore
from larkbot.storage.vault import KEY_FILE


async def check_oauth(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """People's Lark authorizations (/auth) and any user scope the app lacks."""
    lark = settings.lark
    if not lark.configured:
        return CheckResult("lark_auth", True, "Lark is not configured: no /auth")
    db = Database(settings.storage.url)
    try:
        store = TokenStore(db, None, lark.app_id)
        await store.init()
        count = len(await store.all())
        cache = SharedCache(db)
        await cache.init()
        missing = await cache.get(APP_SCOPE_KEY + lark.app_id)
    finally:
        await db.close()
    key = settings.secrets_dir / KEY_FILE
    detail = (
        f"{count} people authorized (/auth); key {'present' if key.exists() else 'not yet made'}"
    )
    if count and not key.exists():
        return CheckResult(
            "lark_auth",
            False,
            f"{detail}, but their tokens cannot be opened on this host",
            f"copy {KEY_FILE} from another replica's $LARKBOT_HOME/.secrets/",
        )
    if missing is not None:
        scopes = missing[0]
        page = console_link(lark.domain, lark.app_id, f"auth?q={quote(scopes)}&token_type=user")
        return CheckResult(
            "lark_auth",
            False,
            f"{detail}; Lark refused a workspace call: the app lacks the user scope {scopes}",
            f"enable it in the developer console ({page}), publish a version; people then /auth",
        )
    return CheckResult("lark_auth", True, detail)
