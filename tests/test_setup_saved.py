"""What `larkbot setup` saved is read as variables the environment leaves unset: a config file's
`${LARK_APP_ID}` picks it up, an exported variable or a literal in the file wins; and where the
registration runs for each `lark.domain`."""

from __future__ import annotations

from pathlib import Path

import pytest

from larkbot.config import load_settings, parse_settings
from larkbot.setup.registration import accounts_hosts

SAVED = "LARK_APP_ID=cli_saved\nLARK_APP_SECRET=saved-secret-1\nLARK_DOMAIN=https://open.larksuite.com\n"


@pytest.fixture
def saved(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LARK_APP_ID", "LARK_APP_SECRET", "LARK_DOMAIN", "LARK_MODE"):
        monkeypatch.delenv(name, raising=False)
    (home / ".secrets").mkdir()
    (home / ".secrets" / "lark.env").write_text("# comment\n" + SAVED + "OTHER=ignored\n")
    return home


def test_a_config_file_picks_the_saved_app_up(saved: Path) -> None:
    config = saved / "config.yaml"
    config.write_text("lark:\n  app_id: ${LARK_APP_ID}\n  app_secret: ${LARK_APP_SECRET:-}\n")
    settings = load_settings(config)
    assert settings.lark.app_id == "cli_saved" and settings.lark.configured
    assert settings.lark.domain == "https://open.larksuite.com"  # no file key: the variable
    assert settings.unset_vars == []  # ${LARK_APP_ID} counts as set


def test_the_environment_and_the_file_win(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LARK_APP_ID", "cli_exported")
    settings = parse_settings({"lark": {"domain": "https://open.feishu.cn"}})
    assert settings.lark.app_id == "cli_exported"
    assert settings.lark.app_secret.get_secret_value() == "saved-secret-1"
    assert settings.lark.domain == "https://open.feishu.cn"


@pytest.mark.parametrize(
    ("lark", "hosts"),
    [
        ({}, ("https://accounts.feishu.cn", "https://accounts.larksuite.com")),
        (
            {"domain": "https://open.larksuite.com"},
            ("https://accounts.larksuite.com", "https://accounts.larksuite.com"),
        ),
        ({"domain": "http://127.0.0.1:9/"}, ("http://127.0.0.1:9", "http://127.0.0.1:9")),
        (
            {"accounts_domain": "https://sso.example.com/"},
            ("https://sso.example.com", "https://sso.example.com"),
        ),
    ],
)
def test_where_the_registration_runs(
    home: Path, lark: dict[str, str], hosts: tuple[str, str]
) -> None:
    assert accounts_hosts(parse_settings({"lark": lark}).lark) == hosts
