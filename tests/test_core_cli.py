"""The real `larkbot` console script: --help, chat with piped stdin, doctor, tools."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.llm import FakeLLM, FakeToolCall

LARKBOT = str(Path(sys.executable).parent / "larkbot")
ROOT = Path(__file__).resolve().parents[1]

CONSENT_PLUGIN = """
from pathlib import Path

import httpx
from tools.base import BaseTool

class Touch(BaseTool):
    name = "touch"
    description = "Create a marker file"
    parameters = {"type": "object", "properties": {"name": {"type": "string"}}}
    side_effect = True

    def consent_check(self, **kw):
        return "create " + kw["name"]

    async def run(self, **kw):
        (Path(__file__).parent.parent / kw["name"]).write_text("x")
        return "created " + kw["name"]
"""


async def larkbot(
    home: Path, *args: str, stdin: bytes = b"", timeout: float = 45
) -> tuple[int, str, str]:
    """Run the `larkbot ARGS` console script with LARKBOT_HOME=home; (exit code, stdout, stderr)."""
    # this checkout first on the path: the venv's editable install may point at another one
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "LARKBOT_HOME": str(home), "PYTHONPATH": path, "NO_COLOR": "1"}
    env.pop("LARKBOT_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        LARKBOT,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def write_config(home: Path, base_url: str, key: str = "test-key", extra: str = "") -> Path:
    config = home / "config.yaml"
    config.write_text(
        f"llm:\n  base_url: {base_url}\n  api_key: {key}\n  model: fake-model\n"
        f"storage:\n  url: sqlite:///{home}/larkbot.db\n{extra}"
    )
    return config


async def test_help(home: Path) -> None:
    code, out, _ = await larkbot(home, "--help")
    assert code == 0 and "chat" in out and "doctor" in out


async def test_chat_with_piped_input(home: Path, fake_llm: FakeLLM) -> None:
    (home / "tools").mkdir()
    (home / "tools" / "touch.py").write_text(CONSENT_PLUGIN)
    config = write_config(home, fake_llm.base_url)
    fake_llm.reply_tools(FakeToolCall("touch", {"name": "one"}))
    fake_llm.reply_text("Created **one**.")
    fake_llm.reply_tools(FakeToolCall("touch", {"name": "two"}))
    fake_llm.reply_text("You did not allow it.")
    stdin = b"make one\ny\n/new\nmake two\n"  # the second consent question meets end of input
    code, out, err = await larkbot(home, "chat", "--config", str(config), stdin=stdin)
    assert code == 0, err
    assert "⚙ touch" in out and "✓ touch: created one" in out
    assert "Created **one**." in out
    assert "✗ touch" in out and "You did not allow it." in out
    assert (home / "one").exists() and not (home / "two").exists()
    # /new started a fresh conversation: the last request holds only the second turn
    roles = [m["role"] for m in fake_llm.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]


async def test_chat_exits_1_when_the_model_fails(home: Path, fake_llm: FakeLLM) -> None:
    config = write_config(home, fake_llm.base_url)
    fake_llm.reply_error(401, "bad key")
    code, out, _ = await larkbot(home, "chat", "--config", str(config), stdin=b"hi\n/exit\n")
    assert code == 1 and "llm.api_key" in out


async def test_doctor_ok(home: Path, fake_llm: FakeLLM, fake_lark: Any) -> None:
    lark = f"lark:\n  app_id: {fake_lark.app_id}\n  app_secret: {fake_lark.app_secret}\n"
    lark += f"  domain: {fake_lark.domain}\n  verification_token: vt\n  encrypt_key: ek\n"
    lark += "owner: {open_ids: [ou_a]}\n"
    config = write_config(home, fake_llm.base_url, extra=lark)
    code, out, err = await larkbot(home, "doctor", "--config", str(config))
    assert code == 0, out + err
    assert "✓ config" in out and str(config) in out
    assert "✓ storage" in out and "✓ llm" in out
    # the model probe: one tiny request with a tool schema, its detected traits printed
    assert "✓ model" in out and "tools accepted" in out and "reasoning no" in out
    assert any(r.get("tools") for r in fake_llm.requests)


async def test_doctor_reports_a_rejected_key(home: Path) -> None:
    async with FakeLLM(api_key="the-right-key") as llm:
        config = write_config(home, llm.base_url, key="wrong")
        code, out, _ = await larkbot(home, "doctor", "--config", str(config))
    assert code == 1
    assert "✗ llm" in out and "refused llm.api_key" in out and "→" in out


async def test_doctor_checks_in_process(home: Path) -> None:
    from larkbot.config import load_settings
    from larkbot.doctor import run_checks

    config = write_config(home, "http://127.0.0.1:9/v1")
    async with httpx.AsyncClient() as http:
        results = {r.name: r for r in await run_checks(load_settings(config), http)}
        assert results["config"].ok and results["storage"].ok
        assert not results["llm"].ok and "cannot reach" in results["llm"].detail
        async with FakeLLM(models=["other"]) as llm:
            llm.reply_error(404, "model not found")
            results = {
                r.name: r
                for r in await run_checks(load_settings(write_config(home, llm.base_url)), http)
            }
        assert not results["llm"].ok and "llm.model" in results["llm"].fix
        async with FakeLLM(models=["other"]) as llm:
            results = {
                r.name: r
                for r in await run_checks(load_settings(write_config(home, llm.base_url)), http)
            }
        assert results["llm"].ok  # not listed, but a 1-token completion works


async def test_tools_lists_plugins_with_flags(home: Path) -> None:
    from larkbot.config import load_settings
    from larkbot.tools_cli import listing

    (home / "tools").mkdir()
    (home / "tools" / "touch.py").write_text(CONSENT_PLUGIN)
    out = await listing(load_settings(None), "lark")
    line = next(x for x in out.splitlines() if x.startswith("touch"))
    assert "side_effect" in line and "consent" in line


def test_terminal_view_renders_tool_lines_and_cards() -> None:
    import io

    from larkbot.chat import TerminalView
    from larkbot.events import FinalAnswer, TextDelta, ToolFinished, ToolStarted, UiPayload

    out = io.StringIO()
    view = TerminalView(out)
    for event in [
        TextDelta("Looking"),
        ToolStarted("c1", "shell", {"command": "ls"}),
        ToolFinished("c1", "shell", "a\nb", False, 0.1),
        UiPayload({"a2ui": [{"beginRendering": {"root": "root"}}]}),
        TextDelta("Done"),
        FinalAnswer("Done"),
    ]:
        view.show(event)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Looking"
    assert lines[1] == '  ⚙ shell({"command": "ls"})'
    assert lines[2].startswith("  ✓ shell: a b (3 chars")
    assert lines[-1] == "Done" and len(lines) >= 5
