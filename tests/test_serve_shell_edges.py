"""The shell's edges through the served app on loopback (signed event → FakeLLM → shell).

An owner's approved `setsid … sleep 600 &` does not outlive its call, and `env` run on the
model's behalf shows only the allow-listed names, never the server's secrets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, message_event, settings_for
from tests.processes import until_gone
from tests.test_cards_approval_e2e import approval_cards, approval_id_of, post_click


async def test_an_approved_setsid_sleep_does_not_survive_its_call(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    command = "setsid sh -c 'exec sleep 600.0271' & sleep 0.3; echo started"
    fake_llm.reply_tools(("shell", {"command": command}))
    fake_llm.reply_text("ran it")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings) as s:
        await s.post_event(message_event("start the sleeper"))
        # Leaving the call's session is a technique, so the owner is asked first.
        await fake_lark.wait_for(lambda: len(approval_cards(fake_lark)) == 1, 20)
        await post_click(s, approval_id_of(approval_cards(fake_lark)[0]), "approve")
        await fake_lark.wait_for(lambda: "ran it" in fake_lark.texts(), 30)
    result = next(m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool")
    assert "started" in result["content"]
    assert "killed 1 background process that outlived the call" in result["content"]
    assert await until_gone("sleep 600.0271")


async def test_env_through_serve_shows_only_the_allow_list(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_KEY", "sk-leak")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:hunter2@db/x")
    monkeypatch.setenv("LARK_APP_SECRET", "lark-leak")
    monkeypatch.setenv("PROJECT_MODE", "dev")
    fake_llm.reply_tools(("shell", {"command": "env"}))
    fake_llm.reply_text("listed")
    settings = settings_for(
        home, fake_lark.domain, fake_llm.base_url, tools={"shell": {"env": ["PROJECT_MODE"]}}
    )
    async with Served(settings) as s:
        await s.post_event(message_event("show the environment"))
        await fake_lark.wait_for(lambda: "listed" in fake_lark.texts(), 30)
    out = next(m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool")["content"]
    assert "PROJECT_MODE=dev" in out and "PATH=" in out
    for secret in ("sk-leak", "hunter2", "lark-leak", "sk-test", "OPENAI_KEY", "DATABASE_URL"):
        assert secret not in out, secret
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    allowed = {"PATH", "HOME", "LANG", "TERM", "TZ", "USER", "PROJECT_MODE", "PWD", "SHLVL", "_"}
    assert names <= allowed | {"LARKBOT_SHELL_CALL", "OLDPWD"}, names - allowed
