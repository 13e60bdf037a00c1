"""FakeLark's application routes: what the app grants, and its long connections.

- GET /open-apis/application/v6/applications/{app_id}?lang=…  → `{"app": fake.app_info}`, by
  default an app set up as `larkbot setup` would (every manifest entry granted, published;
  `new_app_info` is a just-created one);
  (`fake.self_manage = False` → 99991672, the app lacks application:application:self_manage;
  another app's id → 210504 "app not found");
- GET /open-apis/event/v1/connection  → `{"online_instance_cnt": fake.online_connections}`;
- with `fake.gateway` (a FakeLarkWS), its `POST /callback/ws/endpoint` and `GET /ws` too: the SDK
  discovers the long connection on the same `lark.domain` as the REST API, as on Lark.

`grant(fake, scopes, token)` adds scopes the way Lark lists them (`scopes[{scope, token_types}]`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from larkbot.scopes import MANIFEST
from tests.fakes.lark_cardkit import ApiError
from tests.fakes.lark_routes import ok

if TYPE_CHECKING:
    from tests.fakes.lark_server import FakeLark


def new_app_info(name: str) -> dict[str, Any]:
    """A just-created app: no scopes, no events, nothing published."""
    return {
        "app_name": name,
        "scopes": [],
        "event": {"subscription_type": "", "subscribed_events": []},
        "callback_info": {"callback_type": "", "subscribed_callbacks": []},
        "online_version_id": "",
    }


def ready_app_info(name: str) -> dict[str, Any]:
    """An app granting every scope, event and callback of the manifest, with a version online."""
    info = new_app_info(name)
    info["scopes"] = [
        {"scope": n.name, "description": "", "level": 1, "token_types": [n.token]}
        for n in MANIFEST
        if n.kind == "scope"
    ]
    info["event"] = {
        "subscription_type": "websocket",
        "subscribed_events": [n.name for n in MANIFEST if n.kind == "event"],
    }
    callbacks = [n.name for n in MANIFEST if n.kind == "callback"]
    info["callback_info"] = {"callback_type": "websocket", "subscribed_callbacks": callbacks}
    info["online_version_id"] = "7000000000000000001"
    return info


def grant(fake: FakeLark, scopes: Iterable[str], token: str = "tenant") -> None:
    """Let the fake app grant `scopes` for `token` ("tenant" | "user")."""
    listed = fake.app_info["scopes"]
    for scope in scopes:
        listed.append({"scope": scope, "description": "", "level": 1, "token_types": [token]})


def add_app_routes(app: web.Application, fake: FakeLark) -> None:
    """Register the application-info and connection-count routes (and the gateway's)."""

    async def application(request: web.Request) -> web.Response:
        if not fake.self_manage:
            raise ApiError(
                99991672,
                "Access denied. One of the following scopes is required: "
                "[application:application:self_manage]",
            )
        if request.match_info["app_id"] not in (fake.app_id, "me"):
            raise ApiError(210504, "app not found")
        fake.app_info_reads += 1
        return ok({"app": {"app_id": fake.app_id, **fake.app_info}})

    async def connection(request: web.Request) -> web.Response:
        return ok({"online_instance_cnt": fake.online_connections})

    app.router.add_get("/open-apis/application/v6/applications/{app_id}", application)
    app.router.add_get("/open-apis/event/v1/connection", connection)
    if fake.gateway is not None:
        fake.gateway.add_routes(app)
