"""What the Lark app has been granted (scopes, events, callbacks) and how many long connections
it has online: the facts `larkbot setup`, `doctor` and `/readyz` compare with larkbot/scopes.py.

`GET /open-apis/application/v6/applications/:app_id` needs the app scope
`application:application:self_manage`; `GET /open-apis/event/v1/connection` needs none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from larkbot.lark.api.client import LarkClient, as_object, data, seg
from larkbot.scopes import Need

APPLICATION = "/open-apis/application/v6/applications/{app_id}"
CONNECTION = "/open-apis/event/v1/connection"


@dataclass(frozen=True)
class AppInfo:
    """The app as Lark describes it: what it grants and how its events are delivered."""

    name: str
    scopes: frozenset[tuple[str, str]]  # (scope, "tenant" | "user")
    events: frozenset[str]
    callbacks: frozenset[str]
    subscription_type: str  # how events come: "" until chosen in the console
    callback_type: str
    published: bool  # an online version exists (scopes take effect only then)

    def grants(self, need: Need) -> bool:
        """True when the app already has `need`."""
        if need.kind == "event":
            return need.name in self.events
        if need.kind == "callback":
            return need.name in self.callbacks
        return (need.name, need.token) in self.scopes

    def missing(self, needs: list[Need]) -> list[Need]:
        """The entries of `needs` the app does not grant yet."""
        return [n for n in needs if not self.grants(n)]


def _strings(value: Any) -> frozenset[str]:
    return (
        frozenset(v for v in value if isinstance(v, str))
        if isinstance(value, list)
        else frozenset()
    )


def _scopes(items: Any) -> frozenset[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("scope"), str):
            continue
        for token in item.get("token_types") or ["tenant"]:
            kind = "user" if str(token).lower().startswith("user") else "tenant"
            found.add((item["scope"], kind))
    return frozenset(found)


def parse_app(app: dict[str, Any]) -> AppInfo:
    """`data.app` of the application-info answer → AppInfo (missing parts are empty)."""
    event = as_object(app.get("event"))
    callback = as_object(app.get("callback_info") or app.get("callback"))
    # OCL falls back to the online version's list when the app lists none itself
    scopes = app.get("scopes") or as_object(app.get("online_version")).get("scopes")
    return AppInfo(
        name=str(app.get("app_name") or ""),
        scopes=_scopes(scopes),
        events=_strings(event.get("subscribed_events")),
        callbacks=_strings(callback.get("subscribed_callbacks")),
        subscription_type=str(event.get("subscription_type") or ""),
        callback_type=str(callback.get("callback_type") or ""),
        published=bool(app.get("online_version_id")),
    )


async def fetch_app_info(client: LarkClient, app_id: str) -> AppInfo:
    """The app's grants, via the tenant token; LarkAPIError when Lark refuses (no self_manage)."""
    path = APPLICATION.format(app_id=seg(app_id))
    body = await client.transport.request("GET", path, params={"lang": "zh_cn"})
    return parse_app(as_object(data(body).get("app")))


async def online_connections(client: LarkClient) -> int:
    """How many long-connection clients Lark has online for this app (any process, anywhere)."""
    body = await client.transport.request("GET", CONNECTION)
    return int(data(body).get("online_instance_cnt") or 0)
