"""Lark's OAuth endpoints on the accounts host: device authorization, token, refresh, revoke.

RFC 8628 as Lark runs it (docs: shared reference lark-workspace.md §3): `device_authorization`
with HTTP Basic (app id and secret) and a form body; the token endpoint answers OAuth's
`error` (authorization_pending, slow_down, access_denied, expired_token) or Lark's `code`.
These are not Open Platform API calls (no tenant token, no call budget), so plain httpx.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from larkbot.storage.user_tokens import Pair, TokenStore
from larkbot.storage.vault import VaultMismatch

DEVICE_PATH = "/oauth/v1/device_authorization"
TOKEN_PATH = "/oauth/v3/token"
REVOKE_PATH = "/oauth/v1/revoke"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
TIMEOUT = httpx.Timeout(15.0, connect=5.0)


class OAuthError(Exception):
    """The accounts host said no: `error` is OAuth's word or Lark's code as text."""

    def __init__(self, error: str, description: str = "") -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error


@dataclass(frozen=True)
class DeviceCode:
    """Step 1's answer: what the person opens and the code the bot polls with."""

    device_code: str = field(repr=False)
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: float
    interval: float


def _pair(body: dict[str, Any]) -> Pair:
    token = body.get("access_token")
    if not isinstance(token, str) or not token:
        raise OAuthError("invalid_response", "no access_token in the token answer")
    return Pair(
        token,
        str(body.get("refresh_token") or ""),
        float(body.get("expires_in") or 7200),
        float(body.get("refresh_token_expires_in") or 0),
        tuple(str(body.get("scope") or "").split()),
    )


class Accounts:
    """The accounts host of one app."""

    def __init__(self, http: httpx.AsyncClient, host: str, app_id: str, app_secret: str) -> None:
        self.http = http
        self.host = host.rstrip("/")
        self.app_id = app_id
        self._secret = app_secret

    async def _post(self, path: str, form: dict[str, str], basic: bool = False) -> dict[str, Any]:
        auth = httpx.BasicAuth(self.app_id, self._secret) if basic else httpx.USE_CLIENT_DEFAULT
        try:
            resp = await self.http.post(self.host + path, data=form, auth=auth, timeout=TIMEOUT)
        except httpx.TransportError as err:
            raise OAuthError("network", type(err).__name__) from None
        try:
            body = resp.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if body.get("error"):
            raise OAuthError(str(body["error"]), str(body.get("error_description") or ""))
        if body.get("code") not in (None, 0):
            raise OAuthError(str(body["code"]), str(body.get("msg") or ""))
        if resp.status_code >= 400:
            raise OAuthError(f"http_{resp.status_code}", resp.reason_phrase)
        return body

    async def device_authorization(self, scopes: list[str]) -> DeviceCode:
        """Start a flow for `scopes` (space-separated on the wire)."""
        body = await self._post(
            DEVICE_PATH, {"client_id": self.app_id, "scope": " ".join(scopes)}, basic=True
        )
        uri = str(body.get("verification_uri") or "")
        return DeviceCode(
            str(body.get("device_code") or ""),
            str(body.get("user_code") or ""),
            uri,
            str(body.get("verification_uri_complete") or uri),
            float(body.get("expires_in") or 240),
            float(body.get("interval") or 5),
        )

    async def poll(self, device_code: str) -> Pair:
        """One poll: the tokens, or OAuthError (`authorization_pending`, `slow_down`, …)."""
        form = {
            "grant_type": DEVICE_GRANT,
            "device_code": device_code,
            "client_id": self.app_id,
            "client_secret": self._secret,
        }
        return _pair(await self._post(TOKEN_PATH, form))

    async def refresh(self, refresh_token: str) -> Pair:
        """Trade a refresh token (it works once) for a new pair."""
        form = {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": self.app_id,
            "client_secret": self._secret,
        }
        return _pair(await self._post(TOKEN_PATH, form))

    async def revoke(self, token: str) -> None:
        """Ask Lark to end the grant (best effort: the local copy is deleted anyway)."""
        form = {"client_id": self.app_id, "client_secret": self._secret, "token": token}
        await self._post(REVOKE_PATH, form)


async def revoke_grant(
    store: TokenStore, accounts: Accounts, open_id: str
) -> tuple[bool, VaultMismatch | OAuthError | None]:
    """End `open_id`'s grant at Lark if we can, delete ours: (removed, why Lark wasn't told)."""
    unheard: VaultMismatch | OAuthError | None = None
    if store.vault is not None:  # without the key the tokens stay sealed: nothing to tell Lark
        try:
            got = await store.tokens(open_id)
            if got is not None:
                await accounts.revoke(got[1].refresh or got[1].access)
        except (VaultMismatch, OAuthError) as err:  # the local copy goes whatever Lark answers
            unheard = err
    return await store.delete(open_id), unheard
