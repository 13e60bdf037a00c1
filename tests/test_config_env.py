"""Configuration from the environment: no file needed, the file wins, unset `${VAR}` reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from larkbot.config import load_settings
from larkbot.config_env import ENV_KEYS, expand_env

EXAMPLE = Path(__file__).resolve().parent.parent / "config.example.yaml"

ENV = {
    "LARK_APP_ID": "cli_env",
    "LARK_APP_SECRET": "env-secret",
    "LARK_ENCRYPT_KEY": "env-key",
    "LARK_VERIFICATION_TOKEN": "env-token",
    "LARK_DOMAIN": "http://127.0.0.1:9",
    "LARK_MODE": "websocket",
    "LLM_BASE_URL": "http://127.0.0.1:10/v1",
    "LLM_API_KEY": "sk-env",
    "LLM_MODEL": "env-model",
    "LARKBOT_OWNER_OPEN_IDS": "ou_a, ou_b,,",
    "LARKBOT_WEB_TOKEN": "web-env",
    "LARKBOT_STORAGE_URL": "sqlite:////tmp/env.db",
    "REDIS_URL": "redis://127.0.0.1:1/0",
    "LARKBOT_HOST": "127.0.0.1",
    "LARKBOT_PORT": "9099",
}


def _set(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name in ENV_KEYS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_every_contract_variable_works_with_no_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _set(monkeypatch, ENV)
    s = load_settings()
    assert s.source is None
    assert (s.lark.app_id, s.lark.app_secret.get_secret_value()) == ("cli_env", "env-secret")
    assert s.lark.encrypt_key.get_secret_value() == "env-key"
    assert s.lark.verification_token.get_secret_value() == "env-token"
    assert (s.lark.domain, s.lark.mode) == ("http://127.0.0.1:9", "websocket")
    assert (s.llm.base_url, s.llm.api_key.get_secret_value(), s.llm.model) == (
        "http://127.0.0.1:10/v1",
        "sk-env",
        "env-model",
    )
    assert s.owner.open_ids == ["ou_a", "ou_b"]
    assert s.web.token.get_secret_value() == "web-env"
    assert (s.storage.url, s.storage.redis_url) == (
        "sqlite:////tmp/env.db",
        "redis://127.0.0.1:1/0",
    )
    assert (s.server.host, s.server.port) == ("127.0.0.1", 9099)
    assert s.unset_vars == []


@pytest.mark.parametrize("env", [{}, ENV], ids=["empty-env", "full-env"])
def test_no_file_means_exactly_the_example_file(
    home: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    _set(monkeypatch, env)
    without_file = load_settings()
    from_example = load_settings(EXAMPLE)
    assert without_file.model_dump() == from_example.model_dump()


def test_a_value_in_the_file_wins_over_the_variable(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _set(monkeypatch, {"LARK_APP_ID": "from-env", "LLM_MODEL": "env-model"})
    (home / "config.yaml").write_text("lark: {app_id: from-file}\n")
    s = load_settings()
    assert s.lark.app_id == "from-file"
    assert s.llm.model == "env-model"  # a key the file leaves out still comes from the env


def test_unset_variable_without_default_is_reported_by_key(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _set(monkeypatch, {})
    monkeypatch.delenv("NO_SUCH_VAR_12", raising=False)
    (home / "config.yaml").write_text("lark: {app_id: '${NO_SUCH_VAR_12}'}\n")
    s = load_settings()
    assert s.lark.app_id == ""
    assert s.unset_vars == [("lark.app_id", "NO_SUCH_VAR_12")]


def test_defaults_nest_and_env_values_stay_verbatim() -> None:
    env = {"HOME_X": "/h", "RAW": "${HOME_X}"}
    assert expand_env("${MISSING:-sqlite:///${HOME_X}/db}", env) == "sqlite:////h/db"
    assert expand_env("${RAW}", env) == "${HOME_X}"  # a value is never expanded again
    assert expand_env("a ${ not a var} $5 ${", env) == "a ${ not a var} $5 ${"
