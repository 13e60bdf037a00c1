"""FakeAccounts: Lark's accounts host (OAuth device flow, token, refresh, revoke) on 127.0.0.1.

Usage::

    async with FakeAccounts(fake_lark) as accounts:     # lark.accounts_domain = accounts.url
        ...                                          # the bot starts a flow; the card shows a code
        accounts.approve(user_code, "ou_alice")      # the person opens the link and agrees

Routes (shapes as in the shared reference lark-workspace.md §3):
- POST /oauth/v1/device_authorization  Basic app_id:app_secret; form client_id, scope →
  device_code, user_code, verification_uri(_complete), expires_in, interval
- POST /oauth/v3/token  device_code grant: `authorization_pending` until `approve`/`deny`,
  `slow_down` while `slow_downs` > 0 (each poll takes one), `access_denied`, `expired_token`
  past `expires_in`; refresh_token grant: rotating and single-use, a reused or unknown one →
  `invalid_grant` with code 20073 / 20026 (`refresh_calls` records every one presented;
  `refresh_gate`, when given, holds a done refresh's answer until it is set)
- POST /oauth/v1/revoke  form token → `{"code": 0}`; the token and its pair stop working

Issued access tokens (`u-…`) are registered in `lark.user_tokens` with their person and scopes
(user_info and the task route answer with them, tests/fakes/lark_user.py). `requests` records
each call's path, Authorization header and form.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.lark_server import FakeLark

_ids = itertools.count(1)


@dataclass
class Flow:
    """One device authorization as the fake holds it."""

    device_code: str
    user_code: str
    scopes: list[str]
    expires_at: float
    approved_by: str = ""
    granted: list[str] | None = None  # None: every scope asked for
    denied: bool = False
    redeemed: bool = False


@dataclass
class FakeAccounts:
    """The fake accounts host, tied to a FakeLark that serves the user-token routes."""

    lark: FakeLark
    interval: float = 0.05
    expires_in: float = 240.0
    access_expires_in: int = 7200
    names: dict[str, str] = field(default_factory=dict)  # open_id -> display name
    slow_downs: int = 0
    refresh_gate: asyncio.Event | None = None  # a refresh is done at once, answered once set
    flows: list[Flow] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refresh_calls: list[str] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self.live_refresh: dict[str, tuple[str, list[str]]] = {}  # refresh → (open_id, scopes)
        self.spent_refresh: set[str] = set()
        self.issued_secrets: list[str] = []  # every token ever handed out (leak checks)
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakeAccounts:
        app = web.Application()
        app.router.add_post("/oauth/v1/device_authorization", self._device)
        app.router.add_post("/oauth/v3/token", self._token)
        app.router.add_post("/oauth/v1/revoke", self._revoke)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- test controls ---------------------------------------------------------------------
    def flow(self, user_code: str) -> Flow:
        """The flow a user code belongs to."""
        return next(f for f in self.flows if f.user_code == user_code)

    def approve(self, user_code: str, open_id: str, scopes: list[str] | None = None) -> None:
        """`open_id` opens the link and agrees (whoever they are), to `scopes` or all asked."""
        flow = self.flow(user_code)
        flow.approved_by, flow.granted = open_id, scopes

    def deny(self, user_code: str) -> None:
        """The person declines."""
        self.flow(user_code).denied = True

    def issued(self) -> list[str]:
        """Every access token handed out and still valid."""
        return list(self.lark.user_tokens)

    # ---- routes ----------------------------------------------------------------------------
    async def _record(self, request: web.Request) -> dict[str, str]:
        form = {k: str(v) for k, v in (await request.post()).items()}
        auth = request.headers.get("Authorization", "")
        at = time.monotonic()
        self.requests.append({"path": request.path, "authorization": auth, "form": form, "at": at})
        return form

    def _issue(self, open_id: str, scopes: list[str]) -> dict[str, Any]:
        n = next(_ids)
        access, refresh = f"u-fake-{n}", f"ur-fake-{n}"
        name = self.names.get(open_id, open_id)
        self.lark.user_tokens[access] = {"open_id": open_id, "name": name, "scopes": scopes}
        self.live_refresh[refresh] = (open_id, scopes)
        self.issued_secrets += [access, refresh]
        return {
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": self.access_expires_in,
            "refresh_token_expires_in": 604800,
            "scope": " ".join(scopes),
            "token_type": "Bearer",
        }

    async def _device(self, request: web.Request) -> web.Response:
        form = await self._record(request)
        basic = base64.b64encode(f"{self.lark.app_id}:{self.lark.app_secret}".encode()).decode()
        if request.headers.get("Authorization") != f"Basic {basic}":
            return web.json_response({"error": "invalid_client"}, status=401)
        n = next(_ids)
        flow = Flow(f"dc-{n}", f"CODE-{n}", form.get("scope", "").split(), 0.0)
        flow.expires_at = time.monotonic() + self.expires_in
        self.flows.append(flow)
        uri = f"{self.url}/verify"
        return web.json_response(
            {
                "device_code": flow.device_code,
                "user_code": flow.user_code,
                "verification_uri": uri,
                "verification_uri_complete": f"{uri}?user_code={flow.user_code}",
                "expires_in": self.expires_in,
                "interval": self.interval,
            }
        )

    async def _token(self, request: web.Request) -> web.Response:
        form = await self._record(request)
        if form.get("client_secret") != self.lark.app_secret:
            return _error("invalid_client", 20001)
        if form.get("grant_type") == "refresh_token":
            answer = self._refresh(form.get("refresh_token", ""))
            if self.refresh_gate is not None:
                await self.refresh_gate.wait()
            return answer
        flow = next((f for f in self.flows if f.device_code == form.get("device_code")), None)
        if flow is None or flow.redeemed:
            return _error("invalid_grant", 20026)
        if self.slow_downs > 0:
            self.slow_downs -= 1
            return _error("slow_down")
        if time.monotonic() > flow.expires_at:
            return _error("expired_token")
        if flow.denied:
            return _error("access_denied")
        if not flow.approved_by:
            return _error("authorization_pending")
        flow.redeemed = True
        granted = flow.scopes if flow.granted is None else flow.granted
        return web.json_response(self._issue(flow.approved_by, granted))

    def _refresh(self, refresh: str) -> web.Response:
        self.refresh_calls.append(refresh)
        if refresh in self.spent_refresh:
            return _error("invalid_grant", 20073)  # already used: rotation race
        owner = self.live_refresh.pop(refresh, None)
        if owner is None:
            return _error("invalid_grant", 20026)
        self.spent_refresh.add(refresh)
        for token, person in list(self.lark.user_tokens.items()):  # the old access dies too
            if person["open_id"] == owner[0]:
                del self.lark.user_tokens[token]
        return web.json_response(self._issue(*owner))

    async def _revoke(self, request: web.Request) -> web.Response:
        form = await self._record(request)
        token = form.get("token", "")
        self.revoked.append(token)
        owner = self.live_refresh.pop(token, None) or self.lark.user_tokens.pop(token, None)
        if isinstance(owner, tuple):
            self.lark.user_tokens = {
                t: p for t, p in self.lark.user_tokens.items() if p["open_id"] != owner[0]
            }
        return web.json_response({"code": 0})


def _error(error: str, code: int = 0) -> web.Response:
    body: dict[str, Any] = {"error": error, "error_description": error.replace("_", " ")}
    if code:
        body["code"] = code
    return web.json_response(body, status=400)
