"""Each set-up mistake `serve` warns about makes `larkbot doctor` exit 1 and name the fix."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from larkbot.cli import main
from larkbot.config_env import ENV_KEYS
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM


def _good_env(lark: FakeLark, llm: FakeLLM) -> dict[str, str]:
    return {
        "LARK_APP_ID": lark.app_id,
        "LARK_APP_SECRET": lark.app_secret,
        "LARK_DOMAIN": lark.domain,
        "LARK_VERIFICATION_TOKEN": "vt",
        "LARK_ENCRYPT_KEY": "ek",
        "LLM_BASE_URL": llm.base_url,
        "LLM_API_KEY": "sk-test",
        "LLM_MODEL": "fake-model",
        "LARKBOT_OWNER_OPEN_IDS": "ou_owner",
    }


async def _doctor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> tuple[int, str]:
    for name in ENV_KEYS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = await asyncio.to_thread(main, ["doctor"])  # its own loop; the fakes serve on ours
    return code, capsys.readouterr().out


MISTAKES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "webhook without token or key",
        {"LARK_VERIFICATION_TOKEN": None, "LARK_ENCRYPT_KEY": None},
        "403",
        "LARK_ENCRYPT_KEY",
    ),
    ("webhook without key", {"LARK_ENCRYPT_KEY": None}, "owner powers", "LARK_ENCRYPT_KEY"),
    ("no owner", {"LARKBOT_OWNER_OPEN_IDS": None}, "no owner", "larkbot owner add"),
    (
        "hosted LLM without key",
        {"LLM_API_KEY": None, "LLM_BASE_URL": "https://api.openai.com/v1"},
        "hosted endpoint",
        "set LLM_API_KEY",
    ),
    ("no Lark credentials", {"LARK_APP_ID": None}, "cannot reply", "LARK_APP_SECRET"),
]


async def test_a_good_setup_passes(
    home: Path,
    fake_lark: FakeLark,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = await _doctor(monkeypatch, capsys, _good_env(fake_lark, fake_llm))
    assert code == 0, out
    assert "✓ setup" in out and "✗" not in out


@pytest.mark.parametrize(
    ("change", "problem", "fix"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
async def test_each_mistake_fails_with_its_fix(
    home: Path,
    fake_lark: FakeLark,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, str | None],
    problem: str,
    fix: str,
) -> None:
    env = {k: v for k, v in {**_good_env(fake_lark, fake_llm), **change}.items() if v is not None}
    code, out = await _doctor(monkeypatch, capsys, env)
    assert code == 1, out
    failed = [line for line in out.splitlines() if line.startswith("✗")]
    assert len(failed) == 1 and problem in failed[0], out
    assert fix in out.split(failed[0], 1)[1].splitlines()[1]  # the → line under it


async def test_an_unset_variable_fails_naming_the_key(
    home: Path,
    fake_lark: FakeLark,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("MY_MODEL_12", raising=False)
    (home / "config.yaml").write_text("agent: {system_prompt_extra: '${MY_MODEL_12}'}\n")
    code, out = await _doctor(monkeypatch, capsys, _good_env(fake_lark, fake_llm))
    assert code == 1
    assert "agent.system_prompt_extra uses ${MY_MODEL_12}" in out and "export MY_MODEL_12" in out
