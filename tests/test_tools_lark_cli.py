"""Lark CLI tools against a fake `lark-cli` on PATH that records argv and prints JSON or errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from larkbot.config import LiveSettings, parse_settings
from larkbot.context import RequestContext
from larkbot.storage.db import Database
from tests.core_helpers import call_tool
from tools.base import ToolResult
from tools.builtin.lark_tools import (
    LarkCalendarEventsTool,
    LarkChatMessagesTool,
    LarkMessageSendTool,
    to_unix,
)
from tools.runtime import ToolRuntime

FAKE_CLI = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_CLI_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
mode = os.environ.get("FAKE_CLI_MODE", "ok")
version = os.environ.get("FAKE_CLI_VERSION", "1.0.46")
if args == ["--version"]:
    print("lark-cli version " + version)
    sys.exit(0)
if args[:2] == ["im", "+messages-send"] and "--format" in args:
    if tuple(int(x) for x in version.split(".")) < (1, 0, 46):
        sys.stderr.write("Error: unknown flag: --format")
        sys.exit(2)
if mode == "unconfigured":
    sys.stderr.write(json.dumps({{"ok": False, "error": {{
        "type": "config", "message": "not configured: run lark-cli config init"}}}}))
    sys.exit(2)
if mode == "wrapper":  # like the npm wrapper: the real work is a child holding the pipes
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    with open(os.environ["FAKE_CLI_PIDFIFO"], "w") as fifo:
        fifo.write(str(child.pid))
    child.wait()
if mode == "auth":
    sys.stderr.write(json.dumps({{"ok": False, "identity": "user", "error": {{
        "type": "auth", "code": 99991679, "message": "user access token missing",
        "hint": "run lark-cli auth login"}}}}))
    sys.exit(3)
if mode == "garbage":
    print("Welcome to lark-cli!")
    sys.exit(0)
if mode == "slow":
    time.sleep(5)
if mode == "hang":
    with open(os.environ["FAKE_CLI_PIDFIFO"], "w") as fifo:
        fifo.write(str(os.getpid()))
    time.sleep(30)
if args[:2] == ["calendar", "+agenda"]:  # printed in the CLI machine's zone (here UTC)
    print(json.dumps({{"ok": True, "identity": "user", "data": [
        {{"summary": "Standup", "start_time": {{"datetime": "2026-11-30T01:00:00Z"}},
          "end_time": {{"datetime": "2026-11-30T01:15:00Z"}},
          "location": {{"name": "Room 1"}}}}]}}))
elif args[:3] == ["calendar", "events", "instance_view"]:
    print(json.dumps({{"code": 0, "msg": "success", "data": {{"items": [
        {{"summary": "Review", "status": "confirmed",
          "start_time": {{"timestamp": "1764464400"}}, "end_time": {{"timestamp": "1764468000"}}}},
        {{"summary": "Gone", "status": "cancelled",
          "start_time": {{"timestamp": "1764464400"}},
          "end_time": {{"timestamp": "1764468000"}}}}]}}}}))
elif args[:2] == ["im", "+chat-messages-list"]:
    print(json.dumps({{"ok": True, "data": {{"messages": [
        {{"message_id": "om_1", "content": "ship it", "create_time": "2026-11-29 10:00",
          "sender": {{"name": "Alice"}}}}], "has_more": True}}}}))
elif args[:2] == ["im", "+messages-send"]:
    print(json.dumps({{"ok": True, "data": {{"message_id": "om_sent", "chat_id": "oc_1"}}}}))
else:
    sys.stderr.write("unknown command")
    sys.exit(2)
"""


@pytest.fixture
async def rt(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ToolRuntime]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "lark-cli"
    cli.write_text(FAKE_CLI.format(python=sys.executable))
    cli.chmod(cli.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLI_LOG", str(tmp_path / "argv.jsonl"))
    # 3 s: above what starting the fake CLI takes on a loaded machine; "slow" never ends in time
    settings = parse_settings({"tools": {"lark_cli": {"timeout_seconds": 3}}})
    db = Database(settings.storage.url)
    async with httpx.AsyncClient() as http:
        yield ToolRuntime("lark", LiveSettings(settings), http, db)
    await db.close()


def argv_log(tmp_path: Path) -> list[list[str]]:
    lines = (tmp_path / "argv.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


async def test_agenda_in_the_scheduler_timezone(rt: ToolRuntime, tmp_path: Path) -> None:
    out = await LarkCalendarEventsTool(rt).run(action="agenda")
    assert out == "- 2026-11-30 09:00 – 09:15 (UTC+08:00) Standup @ Room 1"
    argv = argv_log(tmp_path)[-1]
    assert argv[:2] == ["calendar", "+agenda"] and argv[-4:] == ["--as", "user", "--format", "json"]
    start, end = int(argv[argv.index("--start") + 1]), int(argv[argv.index("--end") + 1])
    assert end - start == 86400 and (start + 8 * 3600) % 86400 == 0  # midnight in Shanghai


async def test_range_converts_times_and_drops_cancelled(rt: ToolRuntime, tmp_path: Path) -> None:
    out = await LarkCalendarEventsTool(rt).run(
        action="list", start_time="2026-11-30", end_time="2026-12-01"
    )
    assert "Review" in out and "Gone" not in out and "(UTC+08:00)" in out
    argv = argv_log(tmp_path)[-1]
    assert argv[:3] == ["calendar", "events", "instance_view"]
    params = json.loads(argv[argv.index("--params") + 1])
    # midnight in Asia/Shanghai (the default scheduler timezone) is 16:00 UTC the day before
    assert params == {
        "calendar_id": "primary",
        "start_time": "1795968000",
        "end_time": "1796054400",
    }


async def test_range_validation(rt: ToolRuntime) -> None:
    tool = LarkCalendarEventsTool(rt)
    res = await tool.run(action="list", start_time="2026-01-01", end_time="2026-06-01")
    assert isinstance(res, ToolResult) and res.is_error and "40 days" in res.content
    res = await tool.run(action="list", start_time="tomorrow-ish", end_time="2026-06-01")
    assert isinstance(res, ToolResult) and res.is_error and "ISO 8601" in res.content


async def test_chat_messages(rt: ToolRuntime, tmp_path: Path) -> None:
    out = await LarkChatMessagesTool(rt).run(chat_id="oc_1", page_size=5)
    assert out == "[2026-11-29 10:00] Alice: ship it (more available)"
    argv = argv_log(tmp_path)[-1]
    assert argv[:4] == ["im", "+chat-messages-list", "--chat-id", "oc_1"]
    assert argv[argv.index("--as") + 1] == "user" and argv[argv.index("--page-size") + 1] == "5"


async def test_send_builds_command_with_idempotency_key(rt: ToolRuntime, tmp_path: Path) -> None:
    tool = LarkMessageSendTool(rt)
    assert tool.side_effect and tool.no_compress and tool.consent_always(content="x", chat_id="c")
    assert "oc_1" in (tool.consent_check(content="hello", chat_id="oc_1") or "")
    turn = RequestContext("lark", "s1", "ou_owner", True, message_id="om_in")
    out = await call_tool(tool, turn, content="**hi**", chat_id="oc_1")
    await call_tool(tool, turn, content="**hi**", chat_id="oc_1")
    assert out == "sent: message_id=om_sent"
    first, second = [a for a in argv_log(tmp_path) if a != ["--version"]][-2:]
    assert first[-2:] == ["--format", "json"]  # 1.0.46 knows the flag
    assert first[:4] == ["im", "+messages-send", "--chat-id", "oc_1"]
    assert first[first.index("--as") + 1] == "bot"
    key = first[first.index("--idempotency-key") + 1]
    assert key == second[second.index("--idempotency-key") + 1]  # a retried turn cannot post twice


async def test_send_needs_exactly_one_target(rt: ToolRuntime) -> None:
    tool = LarkMessageSendTool(rt)
    for kw in ({}, {"chat_id": "oc_1", "user_id": "ou_1"}):
        res = await call_tool(tool, content="x", **kw)
        assert isinstance(res, ToolResult) and res.is_error and "exactly one" in res.content


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("auth", "auth login"),
        ("garbage", "not JSON"),
        ("slow", "timed out after 3 s"),
    ],
)
async def test_cli_failures_become_clear_errors(
    rt: ToolRuntime, monkeypatch: pytest.MonkeyPatch, mode: str, expected: str
) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", mode)
    res = await LarkCalendarEventsTool(rt).run(action="agenda")
    assert isinstance(res, ToolResult) and res.is_error and expected in res.content
    if mode == "auth":
        assert "user access token missing" in res.content  # the CLI's own text passed through


async def test_missing_binary(rt: ToolRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    res = await LarkChatMessagesTool(rt).run(chat_id="oc_1")
    assert (
        isinstance(res, ToolResult)
        and res.is_error
        and "npm install -g @larksuite/cli" in res.content
    )


def test_to_unix_forms() -> None:
    from zoneinfo import ZoneInfo

    tz = ZoneInfo("Asia/Shanghai")
    assert to_unix("1700000000", tz) == 1700000000
    assert to_unix("2026-11-30T09:00:00Z", tz) == 1796029200
    assert to_unix("2026-11-30T17:00", tz) == 1796029200


async def test_lark_cli_killed_when_the_call_is_cancelled(
    rt: ToolRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a cancelled call (executor timeout, turn cancelled) left lark-cli running."""
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    monkeypatch.setenv("FAKE_CLI_PIDFIFO", str(fifo))
    task = asyncio.create_task(LarkCalendarEventsTool(rt).run(action="agenda"))
    pid = int(await asyncio.wait_for(asyncio.to_thread(fifo.read_text), 30))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    try:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped by the tool, not left to run 30 s
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_send_leaves_out_format_json_for_older_lark_cli(
    rt: ToolRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLI_VERSION", "1.0.14")
    out = await call_tool(LarkMessageSendTool(rt), content="hi", chat_id="oc_1")
    assert out == "sent: message_id=om_sent"
    calls = argv_log(tmp_path)
    assert calls.count(["--version"]) == 1 and "--format" not in calls[-1]
    await call_tool(LarkMessageSendTool(rt), content="again", chat_id="oc_1")
    assert argv_log(tmp_path).count(["--version"]) == 1  # detected once


async def test_unconfigured_cli_is_reported_as_such(
    rt: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "unconfigured")
    res = await LarkCalendarEventsTool(rt).run(action="agenda")
    assert isinstance(res, ToolResult) and res.is_error
    assert "not configured" in res.content and "lark-cli config init" in res.content
    assert "invalid arguments" not in res.content


def dead(pid: int) -> bool:
    """Gone, or a zombie waiting to be reaped (it runs no more)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat_line.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def test_timeout_kills_the_whole_process_group(
    rt: ToolRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: only the wrapper was killed; its child kept the pipes and the call hung."""
    fifo = tmp_path / "child.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("FAKE_CLI_MODE", "wrapper")
    monkeypatch.setenv("FAKE_CLI_PIDFIFO", str(fifo))
    reader = asyncio.create_task(asyncio.to_thread(fifo.read_text))
    loop = asyncio.get_running_loop()
    started = loop.time()
    res = await asyncio.wait_for(LarkCalendarEventsTool(rt).run(action="agenda"), 25)
    elapsed = loop.time() - started
    child = int(await asyncio.wait_for(reader, 30))
    try:
        assert isinstance(res, ToolResult) and "timed out after 3 s" in res.content
        assert elapsed < 20  # 3 s timeout, not the child's 30 s (room for a loaded machine)
        for _ in range(300):  # SIGKILL was sent to the group; its delivery is asynchronous
            if dead(child):
                break
            await asyncio.sleep(0.1)
        assert dead(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
