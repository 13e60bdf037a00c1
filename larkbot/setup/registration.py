"""Lark's one-scan app registration, through lark-oapi 1.7.5's `scene.registration`.

The SDK posts `init`, `begin` and then `poll` to `{accounts}/oauth/v1/app/registration`,
hands us the QR URL, waits `interval` s between polls (+5 s on `slow_down`), moves to the Lark
host when the tenant turns out to be Lark, and ends with the app's id and secret and the
scanning person's open_id — or `access_denied` / `expired_token`, which become SetupError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx

from larkbot.config import LarkConfig
from larkbot.errors import LarkBotError
from larkbot.scopes import Need, addons

FEISHU_OPEN, LARK_OPEN = "https://open.feishu.cn", "https://open.larksuite.com"
FEISHU_ACCOUNTS, LARK_ACCOUNTS = "https://accounts.feishu.cn", "https://accounts.larksuite.com"
PRESET = {  # pre-fills the creation page; the person may change it there
    "name": "larkbot",
    "desc": "A self-hosted AI agent: answers in chats, runs tools for its owners.",
}
# The registration has no public icon URL to point at (the page fetches it), so none is sent.

OnQr = Callable[[str, int], None]  # (url, seconds it stays valid)


class SetupError(LarkBotError):
    """Registration did not produce an app; the message says why and what to do."""


@dataclass(frozen=True)
class Registered:
    """What a completed scan returns."""

    app_id: str
    app_secret: str
    open_id: str  # the person who scanned: the first owner
    brand: str  # "feishu" | "lark"

    @property
    def official_domain(self) -> str:
        """The OpenAPI host of this tenant's brand."""
        return LARK_OPEN if self.brand == "lark" else FEISHU_OPEN


def accounts_hosts(lark: LarkConfig) -> tuple[str, str]:
    """(where registration starts, where it moves for a Lark tenant), per `lark.accounts_domain`."""
    if lark.accounts_domain:
        host = lark.accounts_domain.rstrip("/")
        return host, host
    domain = lark.domain.rstrip("/")
    if domain == FEISHU_OPEN:
        return FEISHU_ACCOUNTS, LARK_ACCOUNTS
    if domain == LARK_OPEN:
        return LARK_ACCOUNTS, LARK_ACCOUNTS
    return domain, domain  # a private deployment or a local fake: everything on one host


def _import_sdk() -> ModuleType:
    """lark_oapi's registration module, imported in a worker thread with a loop of its own:
    the package takes seconds to import and `lark_oapi.ws` binds the importing thread's loop."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        from lark_oapi.scene import registration

        return registration
    finally:
        asyncio.set_event_loop(None)
        loop.close()  # larkbot/lark/arrival/ws.py points lark_oapi.ws at its own loop before use


def _explain(code: str, description: str) -> str:
    if code == "access_denied":
        return "the app creation was cancelled or refused in Lark; run setup again to retry"
    if code == "expired_token":
        return "the QR code expired before it was confirmed; run setup again for a new one"
    if code == "unsupported_auth_method":
        return "this host offers no app secret by registration: create the app in the console"
    return f"registration failed ({code}: {description})"


async def register(
    lark: LarkConfig,
    needs: list[Need],
    on_qr: OnQr,
    *,
    app_id: str | None = None,
    on_status: Callable[[dict[str, Any]], None] | None = None,
) -> Registered:
    """Show a QR code (via `on_qr`), wait for the scan, return the app; SetupError otherwise."""
    sdk = await asyncio.to_thread(_import_sdk)
    start, lark_host = accounts_hosts(lark)
    switched: list[bool] = []  # the SDK moved to the Lark host: the tenant is Lark's

    def status(info: dict[str, Any]) -> None:
        if info.get("status") == "domain_switched":
            switched.append(True)
        if on_status is not None:
            on_status(info)

    try:
        result = await sdk.aregister_app(
            on_qr_code=lambda info: on_qr(str(info["url"]), int(info.get("expire_in") or 0)),
            on_status_change=status,
            source="larkbot",
            domain=start,
            lark_domain=lark_host,
            app_preset=None if app_id else PRESET,
            addons=addons(needs) or None,
            app_id=app_id,
        )
    except sdk.RegisterAppError as err:
        raise SetupError(_explain(err.code, err.description)) from None
    except (httpx.HTTPError, ValueError, KeyError) as err:  # network, or not a registration host
        raise SetupError(
            f"cannot register at {start} ({type(err).__name__}: {err}); check the network "
            "and lark.accounts_domain (LARK_ACCOUNTS_DOMAIN)"
        ) from None
    user = result.get("user_info") or {}
    return Registered(
        app_id=str(result["client_id"]),
        app_secret=str(result["client_secret"]),
        open_id=str(user.get("open_id") or ""),
        brand="lark" if user.get("tenant_brand") == "lark" or switched else "feishu",
    )
