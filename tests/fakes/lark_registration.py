"""FakeRegistration: Lark's one-scan app registration (the accounts host) on 127.0.0.1.

`POST /oauth/v1/app/registration` (form-encoded, as lark-oapi's `scene.registration` sends):
- `action=init`  → `{"supported_auth_methods": methods}`;
- `action=begin` → `device_code`, `verification_uri_complete` (this server's `/page/launcher`),
  `interval`, `expire_in` (the current name; the SDK reads `expires_in` and defaults to 600);
- `action=poll`  → `authorization_pending` until someone opens the link (`scan()` does what a
  phone would), then the outcome: the app's `client_id` / `client_secret` with
  `user_info {open_id, tenant_brand}`, or `access_denied`, or `expired_token`. A Lark-brand
  tenant's pending answers carry `user_info.tenant_brand = "lark"`, as Lark's do.
`slow_down` answers that many polls `slow_down` first.
`GET /page/launcher?…` records the link's query (`opened`, with `addons` decoded).
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from aiohttp import web

ENDPOINT = "/oauth/v1/app/registration"


def decode_addons(encoded: str) -> dict[str, Any]:
    """The `addons` query parameter back to JSON (gzip + urlsafe base64 without padding)."""
    raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    decoded: dict[str, Any] = json.loads(gzip.decompress(raw))
    return decoded


@dataclass
class FakeRegistration:
    """`async with FakeRegistration() as reg`, then point `lark.accounts_domain` at `reg.domain`."""

    app_id: str = "cli_test"
    app_secret: str = "secret"
    open_id: str = "ou_creator"
    brand: str = "feishu"
    outcome: str = "success"  # success | access_denied | expired_token
    interval: float = 0.1
    slow_down: int = 0  # answer this many polls `slow_down` first (the SDK then waits 5 s more)
    methods: list[str] = field(default_factory=lambda: ["client_secret"])
    domain: str = ""
    calls: list[dict[str, str]] = field(default_factory=list)
    opened: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakeRegistration:
        app = web.Application()
        app.router.add_post(ENDPOINT, self._registration)
        app.router.add_get("/page/launcher", self._launcher)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.domain = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def scan(self, url: str) -> dict[str, Any]:
        """What the person's phone does with the QR link: open it (and confirm)."""
        async with httpx.AsyncClient() as http:
            resp = await http.get(url)
        resp.raise_for_status()
        return self.opened[-1]

    def polls(self) -> int:
        """How many `poll` calls came in."""
        return sum(c.get("action") == "poll" for c in self.calls)

    async def _launcher(self, request: web.Request) -> web.Response:
        query: dict[str, Any] = {
            k: v for k, v in parse_qs(urlsplit(str(request.url)).query).items()
        }
        if "addons" in query:
            query["addons"] = decode_addons(query["addons"][0])
        self.opened.append(query)
        return web.Response(text="confirmed")

    async def _registration(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.calls.append(form)
        action = form.get("action")
        if action == "init":
            return web.json_response({"supported_auth_methods": self.methods})
        if action == "begin":
            return web.json_response(
                {
                    "device_code": "dev-1",
                    "verification_uri_complete": f"{self.domain}/page/launcher?ticket=t1",
                    "interval": self.interval,
                    "expire_in": 600,
                }
            )
        if action != "poll" or form.get("device_code") != "dev-1":
            return web.json_response({"error": "invalid_request"})
        return web.json_response(self._poll_answer())

    def _poll_answer(self) -> dict[str, Any]:
        user = {"open_id": self.open_id, "tenant_brand": self.brand}
        if self.slow_down > 0:
            self.slow_down -= 1
            return {"error": "slow_down"}
        if not self.opened:
            pending: dict[str, Any] = {"error": "authorization_pending"}
            if self.brand == "lark":
                pending["user_info"] = {"tenant_brand": "lark"}
            return pending
        if self.outcome != "success":
            return {"error": self.outcome, "error_description": f"fake {self.outcome}"}
        return {"client_id": self.app_id, "client_secret": self.app_secret, "user_info": user}
