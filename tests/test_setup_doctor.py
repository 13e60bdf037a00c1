"""`larkbot doctor` and `/readyz` compare the app's grants (FakeLark's application info) with
the scope manifest, and count long connections against `lark.replicas`."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx

from larkbot.config import Settings, parse_settings
from larkbot.lark.api.client import LarkClient
from larkbot.setup.doctor import check_scopes
from larkbot.setup.readyz import lark_app_line
from tests.fakes.lark_server import FakeLark
from tests.lark_harness import Served, settings_for


def _settings(fake: FakeLark, **lark: Any) -> Settings:
    base = {"app_id": fake.app_id, "app_secret": fake.app_secret, "domain": fake.domain}
    return parse_settings({"lark": {**base, **lark}})


async def test_a_complete_app_is_one_green_line(home: Path, fake_lark: FakeLark) -> None:
    async with httpx.AsyncClient() as http:
        lines = await check_scopes(_settings(fake_lark), http)
    assert [(r.name, r.ok) for r in lines] == [("lark_scopes", True)]


async def test_each_missing_entry_is_named_with_what_breaks(
    home: Path, fake_lark: FakeLark
) -> None:
    info = fake_lark.app_info
    dropped = ("cardkit:card:write", "im:message.group_msg")
    info["scopes"] = [s for s in info["scopes"] if s["scope"] not in dropped]
    info["callback_info"]["subscribed_callbacks"] = []
    info["online_version_id"] = ""
    async with httpx.AsyncClient() as http:
        lines = {r.name: r for r in await check_scopes(_settings(fake_lark), http)}
    assert set(lines) == {
        "scope cardkit:card:write",
        "callback card.action.trigger",
        "lark_version",
    }
    assert not any(r.ok for r in lines.values())
    assert "one plain card at the end" in lines["scope cardkit:card:write"].detail
    assert "buttons do nothing" in lines["callback card.action.trigger"].detail
    assert "larkbot setup" in lines["scope cardkit:card:write"].fix
    async with httpx.AsyncClient() as http:  # group_policy all needs one scope more
        wider = await check_scopes(_settings(fake_lark, group_policy="all"), http)
    assert "scope im:message.group_msg" in {r.name for r in wider}


async def test_without_self_manage_doctor_says_which_scope_to_add(
    home: Path, fake_lark: FakeLark
) -> None:
    fake_lark.self_manage = False
    async with httpx.AsyncClient() as http:
        (line,) = await check_scopes(_settings(fake_lark), http)
        assert not line.ok and "99991672" in line.detail
        assert "application:application:self_manage" in line.fix
        assert await check_scopes(parse_settings({}), http) == []  # the lark line covers it


async def test_more_long_connections_than_replicas_is_a_warning(
    home: Path, fake_lark: FakeLark
) -> None:
    fake_lark.online_connections = 3
    async with httpx.AsyncClient() as http:
        two = await check_scopes(_settings(fake_lark, mode="websocket", replicas=2), http)
        three = await check_scopes(_settings(fake_lark, mode="websocket", replicas=3), http)
        webhook = await check_scopes(_settings(fake_lark), http)
    (extra,) = [r for r in two if r.name == "long_connections"]
    assert not extra.ok and "3 long connections" in extra.detail and "lark.replicas" in extra.fix
    assert [r.ok for r in three if r.name == "long_connections"] == [True]
    assert "long_connections" not in {r.name for r in webhook}


async def test_readyz_warns_and_asks_lark_once(home: Path, fake_lark: FakeLark) -> None:
    fake_lark.app_info["event"]["subscribed_events"] = []
    fake_lark.online_connections = 2
    settings = _settings(fake_lark, mode="websocket", app_id=fake_lark.app_id)
    async with httpx.AsyncClient() as http:
        client = LarkClient(http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret)
        app = SimpleNamespace(settings=settings, client=client)
        line = await lark_app_line(app, timeout=10)
        again = await lark_app_line(app, timeout=10)
    assert line["ok"] is True  # a warning: a missing event never takes the replica out
    assert "event im.message.receive_v1 missing: the bot hears nothing" in line["detail"]
    assert "2 long connections online for lark.replicas 1" in line["detail"]
    assert again == line and fake_lark.app_info_reads == 1  # Lark's quota: asked once


async def test_readyz_has_the_lark_app_line(home: Path, fake_lark: FakeLark, fake_llm: Any) -> None:
    fake_lark.app_info["online_version_id"] = ""
    async with (
        Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s,
        s.http.get(s.url("/readyz")) as r,
    ):
        body = await r.json()
    assert body["components"]["lark_app"] == {"ok": True, "detail": "no published version"}
