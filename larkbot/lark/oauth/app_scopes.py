"""Which user scopes the Lark app has enabled, so a device flow asks only for those.

A person cannot grant a user scope the app has not enabled in the developer console (and how
Lark's consent page treats such a request is unconfirmed), so an app registered before a scope
joined the manifest should not ask for it. As the official OpenClaw-Lark plugin does, they are read
from the app's info (`larkbot.lark.api.app_info`, needs `application:application:self_manage`)
and the rest skipped, for an admin to enable. When the app's info cannot be read (no
self_manage, Lark down) every scope is asked, as before: this check never blocks `/auth`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from larkbot.lark.api.app_info import fetch_app_info
from larkbot.lark.api.client import LarkClient
from larkbot.logs import get_logger
from larkbot.scopes import AUTH_ALWAYS

log = get_logger("larkbot.lark.oauth.app_scopes")

# Short, as OCL's 30 s: an admin who just enabled a scope sees the next `/auth` ask for it,
# while a burst of `/auth`s costs Lark (and the monthly call budget) one call.
KEEP_SECONDS = 60.0
RETRY_SECONDS = 30.0  # after a failed look: fall back to asking all, look again soon
LOOK_TIMEOUT = 5.0  # the person waits for the card meanwhile


@dataclass(frozen=True)
class Split:
    """A flow's scopes: those to ask for, and those skipped because the app lacks them."""

    asked: list[str]
    skipped: list[str]


class AppUserScopes:
    """The app's enabled user scopes, read from Lark at most once per KEEP_SECONDS."""

    def __init__(self, client: LarkClient, app_id: str) -> None:
        self.client = client
        self.app_id = app_id
        self._seen: tuple[float, frozenset[str] | None] | None = None  # (until, scopes)
        self._lock = asyncio.Lock()  # concurrent `/auth`s share one look

    async def enabled(self) -> frozenset[str] | None:
        """The user scopes the app has enabled; None when Lark could not say."""
        async with self._lock:
            if self._seen is not None and time.monotonic() < self._seen[0]:
                return self._seen[1]
            found: frozenset[str] | None
            try:
                async with asyncio.timeout(LOOK_TIMEOUT):
                    info = await fetch_app_info(self.client, self.app_id)
                # A bot's app always has tenant scopes: an empty list is an answer not understood
                # (unknown, so everything is asked), not an app that enabled nothing.
                users = (name for name, token in info.scopes if token == "user")
                found, keep = (frozenset(users) if info.scopes else None), KEEP_SECONDS
            except asyncio.CancelledError:
                raise
            except Exception as err:  # any failure: ask for everything, as before
                log.warning("lark_oauth_app_scopes_unknown", error=f"{type(err).__name__}: {err}")
                found, keep = None, RETRY_SECONDS
            self._seen = (time.monotonic() + keep, found)
            return found

    async def split(self, scopes: list[str]) -> Split:
        """`scopes` split by what the app enabled; AUTH_ALWAYS is always asked (no app switch
        gates it), and everything is asked when the app's scopes are unknown."""
        have = await self.enabled()
        if have is None:
            return Split(list(scopes), [])
        asked = [s for s in scopes if s in AUTH_ALWAYS or s in have]
        return Split(asked, [s for s in scopes if s not in asked])


def console_link(domain: str, app_id: str, page: str = "permission") -> str:
    """The app's `page` in the developer console (by default where an admin enables scopes)."""
    return f"{domain.rstrip('/')}/app/{app_id}/{page}"
