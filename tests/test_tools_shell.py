"""ShellTool with a real sh: output, exit code, timeouts that kill the whole group, output cap."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.builtin_rt import tool_runtime
from tests.processes import until_gone
from tools.builtin.shell import ShellTool, danger, provide
from tools.runtime import ToolRuntime


@pytest.fixture
async def rt(home: Path) -> AsyncIterator[ToolRuntime]:
    async with tool_runtime({"tools": {"shell": {"max_timeout_seconds": 1}}}) as runtime:
        yield runtime


async def _until_exists(path: Path, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return True
        await asyncio.sleep(0.02)
    return False


async def test_output_and_exit_code(rt: ToolRuntime) -> None:
    result = await ShellTool(rt).run(command="echo hello; echo oops >&2; exit 3")
    assert not result.is_error
    assert "hello" in result.content and "oops" in result.content
    assert result.content.endswith("[exit code 3]")


async def test_no_output_is_said(rt: ToolRuntime) -> None:
    result = await ShellTool(rt).run(command="true")
    assert result.content == "(no output)\n[exit code 0]"


@pytest.mark.parametrize("trap", ["", "trap '' TERM; "])
async def test_timeout_kills_the_process_group(rt: ToolRuntime, tmp_path: Path, trap: str) -> None:
    """A background child that would write a file after the timeout dies with its group,
    even when it ignores SIGTERM (SIGKILL follows)."""
    upfile, marker = tmp_path / "child.up", tmp_path / "late.txt"
    child = f"sh -c '{trap}echo up > {upfile}; sleep 3.0171; echo late > {marker}'"
    started = time.monotonic()
    result = await ShellTool(rt).run(command=f"{child} & sleep 30", timeout=0.5)
    assert time.monotonic() - started < 20  # the timeout and the kill, not the 30 s sleep
    assert result.is_error and "timed out after 0.5 s" in result.content
    assert await _until_exists(upfile)
    assert await until_gone("sleep 3.0171")
    assert not marker.exists()


async def test_cancelling_the_call_kills_the_group(rt: ToolRuntime, tmp_path: Path) -> None:
    upfile = tmp_path / "child.up"
    task = asyncio.create_task(ShellTool(rt).run(command=f"echo up > {upfile}; sleep 30.0172"))
    assert await _until_exists(upfile)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await until_gone("sleep 30.0172")


async def test_timeout_is_capped_by_settings(rt: ToolRuntime) -> None:
    result = await ShellTool(rt).run(command="sleep 20", timeout=10_000)
    assert result.is_error and "timed out after 1 s" in result.content


async def test_output_is_capped_with_head_and_tail(rt: ToolRuntime) -> None:
    result = await ShellTool(rt).run(command="seq 1 200000")
    assert len(result.content) <= 8000
    assert result.content.startswith("1\n2\n3\n")
    assert "bytes of output cut" in result.content
    assert "200000\n[exit code 0]" in result.content


async def test_background_child_is_killed_and_reported(rt: ToolRuntime) -> None:
    started = time.monotonic()
    result = await ShellTool(rt).run(command="sleep 30 & echo started")
    assert time.monotonic() - started < 20  # not the background child's 30 s
    assert "started" in result.content and "[exit code 0]" in result.content
    # named by its command line when killed: `sleep 30`, or, when bash had forked it but not yet
    # exec'd sleep (a loaded machine), the forked shell's `bash -c sleep 30 & echo started`
    killed = re.search(r"killed 1 background process that outlived the call: (.*)", result.content)
    assert killed is not None and "sleep 30" in killed.group(1)


async def test_consent_hooks(rt: ToolRuntime) -> None:
    tool = ShellTool(rt)
    assert tool.consent_check(command="ls -la") == "run shell command: ls -la"
    assert tool.consent_scope(command="ls -la") == "shell"
    assert not tool.consent_always(command="ls -la")
    assert tool.consent_always(command="echo x; rm -rf /")
    assert "recursive delete" in (tool.consent_check(command="rm -rf /") or "")


async def test_commands_run_under_bash_the_grammar_the_classifier_parses(rt: ToolRuntime) -> None:
    result = await ShellTool(rt).run(command="echo $'a\\x41' && [[ -n x ]] && echo ok")
    assert result.content == "aA\nok\n[exit code 0]"


def test_without_bash_dash_divergent_syntax_is_dangerous() -> None:
    """Under dash `x &>f rm -rf /` backgrounds x and then runs rm: fail closed without bash."""
    command = "echo x &>/dev/null rm -rf /"
    assert danger(command, bash=True) is None
    assert "bash-only syntax" in (danger(command, bash=False) or "")
    assert danger("ls -la", bash=False) is None


async def test_provide_and_flags(rt: ToolRuntime) -> None:
    (tool,) = provide(rt)
    assert tool.name == "shell" and tool.fast_path and tool.side_effect
    assert os.environ.get("LARKBOT_HOME")


async def test_shell_does_not_leak_the_bots_credentials(
    rt: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: `env` in a shell call printed LLM_API_KEY and LARK_APP_SECRET to the model."""
    monkeypatch.setenv("LLM_API_KEY", "sk-very-secret")
    monkeypatch.setenv("LARK_APP_SECRET", "lark-very-secret")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    out = (await ShellTool(rt).run(command="env")).content
    assert "sk-very-secret" not in out and "lark-very-secret" not in out
    assert "HARMLESS_SETTING" not in out  # an allow-list: unknown names are not passed on


@pytest.mark.parametrize("cgroup", ["auto", "off"])
async def test_setsid_background_job_does_not_survive_its_call(
    home: Path, tmp_path: Path, cgroup: str
) -> None:
    """`setsid sleep 600 &` leaves the session; the cgroup (or the marker sweep) still finds it."""
    config = {"tools": {"shell": {"cgroup": cgroup}}}
    async with tool_runtime(config) as runtime:
        # the call ends once the escaped job has started (its file is written), however long
        # a loaded machine takes to start it
        upfile = tmp_path / "escaped.up"
        command = (
            f"setsid sh -c 'echo up > {upfile}; exec sleep 600.0173' & "
            f"until [ -s {upfile} ]; do sleep 0.02; done; echo done"
        )
        result = await ShellTool(runtime).run(command=command)
    assert "done" in result.content and "[exit code 0]" in result.content
    assert "killed 1 background process that outlived the call" in result.content
    assert await until_gone("sleep 600.0173")


async def test_double_fork_and_timeout_kill_the_whole_tree(home: Path, tmp_path: Path) -> None:
    upfile = tmp_path / "grandchild.up"
    async with tool_runtime({"tools": {"shell": {"cgroup": "off"}}}) as runtime:
        command = f"(setsid sh -c 'echo up > {upfile}; sleep 600.0174' &) ; sleep 30"
        result = await ShellTool(runtime).run(command=command, timeout=0.5)
    assert result.is_error and "every process of the call was killed" in result.content
    assert await _until_exists(upfile)
    assert await until_gone("sleep 600.0174")


async def test_environment_is_an_allow_list(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only PATH HOME LANG TERM TZ USER and the names in tools.shell.env reach a command."""
    monkeypatch.setenv("OPENAI_KEY", "sk-leak")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:hunter2@db/x")
    monkeypatch.setenv("PROJECT_MODE", "dev")
    monkeypatch.setenv("LANG", "C.UTF-8")
    async with tool_runtime({"tools": {"shell": {"env": ["PROJECT_MODE"]}}}) as runtime:
        out = (await ShellTool(runtime).run(command="env")).content
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert "sk-leak" not in out and "hunter2" not in out
    assert "PROJECT_MODE=dev" in out and "LANG=C.UTF-8" in out
    allowed = {"PATH", "HOME", "LANG", "TERM", "TZ", "USER", "PROJECT_MODE", "PWD", "SHLVL", "_"}
    assert names <= allowed | {"LARKBOT_SHELL_CALL", "OLDPWD"}, names - allowed


async def test_cgroup_holds_a_process_that_drops_every_trace(home: Path, tmp_path: Path) -> None:
    """env -i + setsid + double fork drop session, marker and parent: only a cgroup holds it."""
    from tools.builtin._process_tree import cgroup_root

    if cgroup_root() is None:
        pytest.skip("this kernel does not let the test process create a cgroup v2")
    upfile = tmp_path / "ghost.up"  # the call ends once the ghost has started, however slowly
    inner = f"echo up > {upfile}; exec sleep 600.0175"
    command = f'(env -i setsid sh -c "{inner}" &); until [ -s {upfile} ]; do sleep 0.02; done'
    async with tool_runtime({}) as runtime:
        result = await ShellTool(runtime).run(command=command)
    assert "killed 1 background process" in result.content
    assert await until_gone("sleep 600.0175")
