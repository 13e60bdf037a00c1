"""No Lark app at all (a fresh `make run`): `serve` and `doctor` say once that Lark is not
connected and that `larkbot setup` connects it and makes you the owner — no verification token,
encrypt key or `/claim` to hunt for, which only matter once an app is configured."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from structlog.testing import capture_logs

from larkbot.app import App
from larkbot.config import parse_settings
from larkbot.misconfig import find_problems
from larkbot.server import warn_misconfiguration
from larkbot.start_screen import gather, next_step
from tests.fakes.llm import FakeLLM
from tests.test_doctor_misconfig import _doctor

NOT_YET = ("/claim", "LARK_VERIFICATION_TOKEN", "LARK_ENCRYPT_KEY", "encrypt_key")


class _Runner:
    """The aiohttp runner as `gather` reads it: no web service, so no token on the screen."""

    app: ClassVar[dict[Any, Any]] = {}


def _no_app(home: Path, llm_url: str) -> Any:
    return parse_settings(
        {
            "llm": {"base_url": llm_url, "max_retries": 0},  # local: no key needed
            "storage": {"url": f"sqlite:///{home}/larkbot.db"},
        }
    )


async def test_serve_without_an_app_says_setup_once(home: Path, fake_llm: FakeLLM) -> None:
    settings = _no_app(home, fake_llm.base_url)
    app = App(settings)
    with capture_logs() as logs:
        await app.start()
        try:
            await warn_misconfiguration(app)
            state = await gather(app, _Runner(), "127.0.0.1", 8080)
        finally:
            await app.stop()
    warnings = [e for e in logs if e["log_level"] in ("warning", "error")]
    events = [e["event"] for e in warnings]
    assert "lark_events_unsigned" not in events
    assert not [e for e in warnings if e["event"] == "misconfigured"], warnings
    (lark,) = [e for e in warnings if e["event"] == "lark_not_configured"]
    assert "larkbot setup" in lark["hint"] and "owner" in lark["hint"]
    assert "not connected" in lark["problem"]
    (pairing,) = [e for e in warnings if e["event"] == "owner_pairing_code"]
    assert "larkbot setup" in pairing["hint"]
    for event in warnings:
        said = " ".join(str(v) for v in event.values())
        assert not any(word in said for word in NOT_YET), event
    assert "an owner" not in state.missing and not state.pairing_code
    assert "larkbot setup" in next_step(state) and "owner" in next_step(state)


async def test_doctor_without_an_app_fails_one_line_with_setup(
    home: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = {"LLM_BASE_URL": fake_llm.base_url, "LLM_MODEL": "fake-model"}  # nothing else set
    code, out = await _doctor(monkeypatch, capsys, env)
    assert code == 1, out
    failed = [line for line in out.splitlines() if line.startswith("✗")]
    assert len(failed) == 1 and failed[0].startswith("✗ lark ") and "not connected" in failed[0]
    fix = out.split(failed[0], 1)[1].splitlines()[1]
    assert "larkbot setup" in fix and "owner" in fix
    assert not any(word in out for word in NOT_YET), out
    assert "owner set" not in out  # nobody owns it yet: the setup line must not say so


def test_the_specific_fixes_stay_once_an_app_is_configured(home: Path) -> None:
    creds = {"app_id": "cli_x", "app_secret": "s"}
    keys = [p.key for p in find_problems(parse_settings({"lark": creds}), has_owner=False)]
    assert {"webhook_auth", "owner"} <= set(keys) and "lark_credentials" not in keys
    unsigned = parse_settings({"lark": {**creds, "verification_token": "vt"}})
    assert "webhook_unsigned" in [p.key for p in find_problems(unsigned, has_owner=True)]
    alone = [p.key for p in find_problems(parse_settings({}), has_owner=False)]
    assert alone[0] == "lark_credentials" and "webhook_auth" not in alone
    assert "owner" not in alone
