"""`larkbot setup --no-qr` end to end, as a subprocess, against a fake registration host and
FakeLark: credentials saved 0600 where the config picks them up, the domain from the tenant's
brand, the scanner made an owner, and a second run asking only for what the app lacks."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest

from larkbot.config import load_settings
from larkbot.config_env import ENV_KEYS
from larkbot.lark.owners import Owners
from larkbot.scopes import MANIFEST, enabled
from larkbot.storage.db import Database
from tests.fakes.lark_app import grant, new_app_info
from tests.fakes.lark_registration import FakeRegistration
from tests.fakes.lark_server import FakeLark

pytestmark = pytest.mark.timeout(120)  # real processes, each importing lark-oapi (~3 s)


def _env(home: Path, reg: FakeRegistration, lark: FakeLark) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS and k != "LARKBOT_CONFIG"}
    # the registration host and the Open Platform are the fakes; nothing else is reachable
    env.update(LARKBOT_HOME=str(home), LARK_ACCOUNTS_DOMAIN=reg.domain, LARK_DOMAIN=lark.domain)
    return env


async def _setup(
    env: dict[str, str], reg: FakeRegistration, *args: str, scan: bool = True
) -> tuple[int, str, str]:
    """Run `larkbot setup --no-qr ARGS`; open the printed link (the person scanning) if asked."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "larkbot", "setup", "--no-qr", *args,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    while line := (await proc.stdout.readline()).decode():
        lines.append(line)
        if scan and line.startswith(reg.domain):
            await reg.scan(line.strip())
    err = (await proc.stderr.read()).decode()
    return await proc.wait(), "".join(lines), err


async def _owners(home: Path) -> list[str]:
    db = Database(f"sqlite:///{home}/larkbot.db")
    try:
        owners = Owners(db, [])
        await owners.init()
        return [e.open_id for e in await owners.all()]
    finally:
        await db.close()


async def test_first_setup_saves_the_app_and_makes_the_scanner_owner(
    tmp_path: Path, fake_lark: FakeLark
) -> None:
    home = tmp_path / "home"
    fake_lark.app_info = new_app_info("larkbot")  # granted what the scan asked for
    grant(fake_lark, [n.name for n in MANIFEST if n.kind == "scope" and n.feature == "chat"])
    async with FakeRegistration(app_id=fake_lark.app_id, app_secret=fake_lark.app_secret) as reg:
        reg.brand = "lark"
        code, out, err = await _setup(_env(home, reg, fake_lark), reg)
    assert code == 0, err
    link = reg.opened[0]
    assert link["name"] == ["larkbot"] and "desc" in link and "clientID" not in link
    wanted = enabled(load_settings())  # the defaults (the workspace's scopes are user scopes)
    tenant = [n.name for n in wanted if n.kind == "scope" and n.token == "tenant"]
    assert link["addons"]["scopes"]["tenant"] == tenant
    assert link["addons"]["events"]["items"]["tenant"] == [
        n.name for n in wanted if n.kind == "event"
    ]
    assert link["addons"]["callbacks"]["items"] == ["card.action.trigger"]

    saved = home / ".secrets" / "lark.env"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    text = saved.read_text()
    assert f"LARK_APP_SECRET={fake_lark.app_secret}\n" in text
    assert "LARK_DOMAIN=https://open.larksuite.com\n" in text  # a Lark tenant
    assert "LARK_MODE=websocket\n" in text  # no webhook token: the long connection
    assert "(Lark)" in out and "ou_creator (who scanned) is now an owner" in out
    assert "persistent connection" in out and "Publish a version" in out
    assert "cardkit:card:write — without it one plain card" in out  # read back: not granted
    assert await _owners(home) == ["ou_creator"]

    os.environ["LARKBOT_HOME"] = str(home)  # the config needs no edit to pick the app up
    try:
        settings = load_settings()
    finally:
        del os.environ["LARKBOT_HOME"]
    assert settings.lark.app_id == fake_lark.app_id and settings.lark.configured
    assert settings.lark.domain == "https://open.larksuite.com"
    assert settings.lark.mode == "websocket"


async def test_a_rescan_asks_only_for_what_the_app_lacks(
    tmp_path: Path, fake_lark: FakeLark
) -> None:
    home = tmp_path / "home"
    fake_lark.app_info = new_app_info("larkbot")
    wanted = enabled(load_settings())  # every feature on by default
    for token in ("tenant", "user"):
        scopes = [n.name for n in wanted if n.kind == "scope" and n.token == token]
        grant(fake_lark, [s for s in scopes if s != "cardkit:card:write"], token)
    fake_lark.app_info["event"]["subscribed_events"] = [n.name for n in wanted if n.kind == "event"]
    async with FakeRegistration(app_id=fake_lark.app_id, app_secret=fake_lark.app_secret) as reg:
        env = _env(home, reg, fake_lark)
        env.update(LARK_APP_ID=fake_lark.app_id, LARK_APP_SECRET=fake_lark.app_secret)
        env["LARKBOT_OWNER_OPEN_IDS"] = "ou_boss"  # confirming a re-scan makes nobody an owner
        code, out, err = await _setup(env, reg, "--app-id", fake_lark.app_id)
        assert code == 0, err
        assert "ou_creator (who scanned) is no owner" in out
        assert await _owners(home) == []  # nobody stored (ou_boss is configured)
        link = reg.opened[0]
        assert link["clientID"] == [fake_lark.app_id] and "name" not in link
        assert link["addons"] == {
            "scopes": {"tenant": ["cardkit:card:write"]},
            "callbacks": {"items": ["card.action.trigger"]},
        }
        assert "adding 1 scope, 1 callback it lacks" in out

        grant(fake_lark, ["cardkit:card:write"])  # the person confirmed: now nothing is missing
        fake_lark.app_info["callback_info"]["subscribed_callbacks"] = ["card.action.trigger"]
        code, out, err = await _setup(env, reg, scan=False)
    assert code == 0, err
    assert "already has every scope, event and callback" in out
    assert len(reg.opened) == 1  # no second QR code was needed


@pytest.mark.parametrize(
    ("outcome", "said"),
    [("access_denied", "cancelled or refused"), ("expired_token", "QR code expired")],
)
async def test_a_scan_that_ends_without_an_app_fails_with_a_reason(
    tmp_path: Path, fake_lark: FakeLark, outcome: str, said: str
) -> None:
    async with FakeRegistration(outcome=outcome, slow_down=1) as reg:
        code, out, err = await _setup(_env(tmp_path / "home", reg, fake_lark), reg)
    assert code == 1
    assert said in err
    assert "poll more slowly: every 5.1 s" in out  # slow_down: the interval grew by 5 s
    assert not (tmp_path / "home" / ".secrets" / "lark.env").exists()
