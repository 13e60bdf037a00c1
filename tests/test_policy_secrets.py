"""The bot's own secrets never reach the model or the history; the process is not dumpable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog

from larkbot.config import parse_settings
from larkbot.logs import configure_logging, get_logger
from larkbot.policy.secrets import SecretScrubber, bot_secrets
from tests.builtin_rt import tool_runtime
from tests.core_helpers import collect, ctx, make_rig, settings_for
from tests.fakes.llm import FakeLLM
from tools.base import BaseTool
from tools.builtin.get_secret import GetSecretTool
from tools.builtin.shell import ShellTool

KEY = "test-key"  # the LLM key of `settings_for`


class EnvironReader(BaseTool):
    """What `cat /proc/$PPID/environ` gives: the bot's keys in plain text."""

    name = "environ"
    description = "Read the environment."

    async def run(self, **kw: Any) -> str:
        return f"LLM_API_KEY={KEY}\0LARK_APP_SECRET=app-secret-123\0PATH=/usr/bin"


def test_every_configured_secret_is_scrubbed_by_name() -> None:
    settings = parse_settings(
        {
            "lark": {"app_secret": "app-secret-123", "encrypt_key": "enc-key-456"},
            "llm": {"api_key": "sk-live-789"},
            "web": {"token": "web-token-abc"},
            "storage": {"url": "postgresql://bot:db-pass-xyz@127.0.0.1/bot"},
        }
    )
    assert set(bot_secrets(settings)) == {
        "lark.app_secret",
        "lark.encrypt_key",
        "llm.api_key",
        "web.token",
        "storage.url password",
    }
    scrub = SecretScrubber(lambda: settings)
    text = "a=app-secret-123 b=sk-live-789 c=db-pass-xyz d=web-token-abc e=enc-key-456"
    cleaned = scrub.text(text)
    assert "secret-123" not in cleaned and "789" not in cleaned and "xyz" not in cleaned
    assert "[redacted: llm.api_key]" in cleaned
    assert scrub.arguments({"cmd": ["echo sk-live-789"], "n": 1}) == {
        "cmd": ["echo [redacted: llm.api_key]"],
        "n": 1,
    }


async def test_secrets_in_tool_results_and_arguments_never_reach_model_or_history(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Regression: the shell read /proc/$PPID/environ and the keys sat in the session history."""
    settings = settings_for(fake_llm.base_url, tmp_path)
    scrub = SecretScrubber(lambda: settings)
    rig = await make_rig(fake_llm.base_url, tmp_path, [EnvironReader()], scrubber=scrub)
    fake_llm.reply_tools(("environ", {"echo": f"my key is {KEY}"}))
    fake_llm.reply_text("done")
    events = await collect(rig.agent, "show env", ctx())
    history = await rig.store.load("s1")
    await rig.close()
    second = str(fake_llm.requests[1]["messages"])
    assert KEY not in second and "[redacted: llm.api_key]" in second
    assert KEY not in str(history) and KEY not in str(events)


def test_the_process_marks_itself_not_dumpable() -> None:
    code = (
        "from larkbot.policy.secrets import is_dumpable, make_undumpable\n"
        "before = is_dumpable(); ok = make_undumpable(); print(before, ok, is_dumpable())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["True", "True", "False"], out.stderr


def test_logs_hide_secret_values_and_credential_keys_at_any_depth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = parse_settings({"llm": {"api_key": "sk-live-789"}})
    saved = structlog.get_config()
    configure_logging("debug", "json", SecretScrubber(lambda: settings).text)
    try:
        get_logger("t").info(
            "tool_call",
            arguments={"command": "curl -H 'x: sk-live-789'", "opts": [{"api_key": "k-12345678"}]},
            note="key sk-live-789 in a message",
        )
    finally:
        structlog.configure(**saved)
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert "sk-live-789" not in json.dumps(line) and "k-12345678" not in json.dumps(line)
    assert line["arguments"]["command"] == "curl -H 'x: [redacted: llm.api_key]'"
    assert line["arguments"]["opts"] == [{"api_key": "[redacted]"}]


def test_values_stored_under_dot_secrets_are_scrubbed(home: Path) -> None:
    """One value a file (get_secret's layout), KEY=value lines, JSON (app credentials)."""
    stored = home / ".secrets"
    stored.mkdir(mode=0o700)
    (stored / "github").write_text("ghp-stored-token-0042\n")
    (stored / "app.env").write_text("LARK_APP_ID=cli_a1b2c3d4\nLARK_APP_SECRET='lark-sec-0043'\n")
    (stored / "app.json").write_text(json.dumps({"app": {"secret": "json-secret-0044"}}))
    settings = parse_settings({})
    scrub = SecretScrubber(lambda: settings)
    text = "t=ghp-stored-token-0042 s=lark-sec-0043 j=json-secret-0044 short=abc"
    cleaned = scrub.text(text)
    assert "0042" not in cleaned and "0043" not in cleaned and "0044" not in cleaned
    assert "[redacted: .secrets/github]" in cleaned and "short=abc" in cleaned
    assert scrub.text(text, stored=False) == text  # get_secret's own answer
    (stored / "new").write_text("ghp-rotated-token-0045\n")
    (stored / "new").replace(stored / "github")  # rotated (the folder changes: seen at once)
    assert scrub.text("ghp-rotated-token-0045") == "[redacted: .secrets/github]"


async def test_a_stored_secret_printed_by_a_command_never_reaches_the_model(
    fake_llm: FakeLLM, tmp_path: Path, home: Path
) -> None:
    """A copy of a `.secrets/` file read by the shell is redacted; get_secret still answers."""
    (home / ".secrets").mkdir(mode=0o700)
    (home / ".secrets" / "github").write_text("ghp-stored-token-0046\n")
    copy = tmp_path / "copy.txt"  # a copy the sandbox cannot hide
    copy.write_text("token: ghp-stored-token-0046\n")
    settings = settings_for(fake_llm.base_url, tmp_path)
    async with tool_runtime({}) as rt:
        tools: list[BaseTool] = [ShellTool(rt), GetSecretTool(rt)]
        rig = await make_rig(
            fake_llm.base_url, tmp_path, tools, scrubber=SecretScrubber(lambda: settings)
        )
        fake_llm.reply_tools(("shell", {"command": f"cat {copy}"}))
        fake_llm.reply_tools(("get_secret", {"name": "github"}))
        fake_llm.reply_text("done")
        await collect(rig.agent, "show the token", ctx())
        history = await rig.store.load("s1")
        await rig.close()
    results = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert "token: [redacted: .secrets/github]" in results[0] and "0046" not in results[0]
    assert results[1] == "ghp-stored-token-0046"  # asked every time, then given verbatim
    stored = [m["content"] for m in history if m.get("role") == "tool"]
    assert "[redacted: .secrets/github]" in stored[0] and "0046" not in stored[0]
