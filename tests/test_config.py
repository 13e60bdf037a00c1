"""Config: lookup order, ${VAR} expansion, defaults, errors naming the key, hot reload of tools."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from larkbot.cli import main as cli_main
from larkbot.config import LiveSettings, load_settings, parse_settings
from larkbot.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_need_no_file(home: Path) -> None:
    settings = load_settings()
    assert settings.source is None
    assert settings.lark.mode == "webhook"
    assert settings.storage.url == f"sqlite:///{home}/larkbot.db"
    assert settings.knowledge_dir == home / "knowledge"
    assert settings.secrets_dir == home / ".secrets"
    assert settings.agent.max_steps == 12


def test_lookup_order(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(home / "config.yaml", "llm: {model: from-home}\n")
    assert load_settings().llm.model == "from-home"
    env_file = write(tmp_path / "env.yaml", "llm: {model: from-env}\n")
    monkeypatch.setenv("LARKBOT_CONFIG", str(env_file))
    assert load_settings().llm.model == "from-env"
    flag_file = write(tmp_path / "flag.yaml", "llm: {model: from-flag}\n")
    assert load_settings(flag_file).llm.model == "from-flag"


def test_env_expansion_with_defaults(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LARK_APP_ID", "cli_123")
    monkeypatch.delenv("LARK_ENCRYPT_KEY", raising=False)
    settings = parse_settings(
        {
            "lark": {
                "app_id": "${LARK_APP_ID}",
                "encrypt_key": "${LARK_ENCRYPT_KEY:-}",
                "domain": "${LARK_DOMAIN:-https://open.larksuite.com}",
            }
        }
    )
    assert settings.lark.app_id == "cli_123"
    assert settings.lark.encrypt_key.get_secret_value() == ""
    assert settings.lark.domain == "https://open.larksuite.com"
    assert "cli_123" not in repr(settings.lark.app_secret)


def test_error_names_the_key(home: Path) -> None:
    with pytest.raises(ConfigError) as err:
        parse_settings({"lark": {"mode": "carrier-pigeon"}, "server": {"port": 99999}})
    text = str(err.value)
    assert "lark.mode" in text and "carrier-pigeon" in text
    assert "server.port" in text
    with pytest.raises(ConfigError, match=r"llm\.modle: unknown key"):
        parse_settings({"llm": {"modle": "x"}})


def test_config_errors_never_echo_secrets(home: Path, tmp_path: Path) -> None:
    raw = {"lark": {"app_secret": 73915508, "encrypt_key": 4242424242}, "llm": {"api_key": 987654}}
    with pytest.raises(ConfigError) as err:
        parse_settings(raw)  # unquoted numbers: not strings, so refused
    text = str(err.value)
    assert "lark.app_secret" in text and "llm.api_key" in text and "quote it" in text
    assert not any(s in text for s in ("73915508", "4242424242", "987654"))
    bad = write(tmp_path / "bad.yaml", "lark:\n  app_secret: s3cr3t-value: oops\n")
    with pytest.raises(ConfigError) as err:
        load_settings(bad)
    assert "line 2" in str(err.value) and "s3cr3t-value" not in str(err.value)


def test_bad_yaml_and_missing_named_file(home: Path, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "llm: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_settings(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.yaml")


def test_cli_reports_config_error_without_traceback(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path / "bad.yaml", "owner: {open_ids: 5}\n")
    assert cli_main(["doctor", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "owner.open_ids" in err and "Traceback" not in err


def test_tools_section_hot_reloads(home: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.yaml", "tools: {web_search: {provider: duckduckgo}}\nllm: {model: a}\n"
    )
    live = LiveSettings(load_settings(path), check_interval=0)
    assert live.tools().web_search.provider == "duckduckgo"
    write(path, "tools: {web_search: {provider: tavily, api_key: k}}\nllm: {model: b}\n")
    os.utime(path, (os.path.getmtime(path) + 5, os.path.getmtime(path) + 5))
    assert live.tools().web_search.provider == "tavily"
    assert live.get().llm.model == "a"  # only tools: is live; the rest needs a restart


def test_a_config_created_after_start_is_read_live(home: Path) -> None:
    settings = load_settings()  # `serve` with no config file yet
    assert settings.source is None
    live = LiveSettings(settings, check_interval=0)
    assert live.tools().web_search.provider == "duckduckgo"
    # the file the lookup would have read ($LARKBOT_HOME/config.yaml) appears: read, no restart
    write(home / "config.yaml", "tools: {web_search: {provider: tavily, api_key: k}}\n")
    assert live.tools().web_search.provider == "tavily"
    path = home / "config.yaml"
    write(path, "tools: {web_search: {provider: searxng}}\n")
    os.utime(path, (os.path.getmtime(path) + 5, os.path.getmtime(path) + 5))
    assert live.tools().web_search.provider == "searxng"  # and edits after that, too


def test_broken_reload_keeps_last_good(home: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "tools: {web_search: {provider: searxng}}\n")
    live = LiveSettings(load_settings(path), check_interval=0)
    write(path, "tools: {web_search: {provider: nonsense}}\n")
    os.utime(path, (os.path.getmtime(path) + 5, os.path.getmtime(path) + 5))
    assert live.tools().web_search.provider == "searxng"


def test_example_config_is_valid(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = Path(__file__).resolve().parent.parent / "config.example.yaml"
    settings = load_settings(example)
    assert settings.server.port == 8080
    assert settings.lark.group_policy == "mention"


def test_scheduler_zone_is_none_when_timezone_names_none(home: Path) -> None:
    """Dates shown to people fall back on their own (UTC, the host's) rather than failing."""
    from larkbot.prompt import _now

    assert str(parse_settings({"scheduler": {"timezone": "Europe/Paris"}}).scheduler.zone()) == (
        "Europe/Paris"
    )
    wrong = parse_settings({"scheduler": {"timezone": "Mars/Olympus"}})
    assert wrong.scheduler.zone() is None
    assert _now(wrong).utcoffset() is not None  # the host's zone, still aware
