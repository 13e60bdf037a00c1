"""An MCP server killed from outside: a call made while it restarts waits for it, then runs.
`larkbot tools` connects the configured servers too, and says which did not connect."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from larkbot.config import McpServerConfig
from tests.test_core_cli import larkbot
from tests.test_mcp_client import SERVER, call
from tools.mcp import McpManager, McpTool
from tools.registry import ToolRegistry

Start = Callable[[list[str], float], Awaitable[ToolRegistry]]  # argv, timeout_seconds


async def kill_and_see_it_noticed(registry: ToolRegistry) -> int:
    """SIGKILL the server; return its pid once the client has seen the connection end."""
    tool = registry.get("mcp_demo_pid")
    assert isinstance(tool, McpTool)
    pid = int((await call(registry, "mcp_demo_pid")).content)
    os.kill(pid, signal.SIGKILL)
    async with asyncio.timeout(20):  # the end of the pipe is noticed without any call or ping
        while tool.server.connected.is_set():
            await asyncio.sleep(0.01)
    return pid


@pytest.fixture
async def manager_for() -> AsyncIterator[Start]:
    """Start the demo server under a manager (stopped after the test)."""
    managers: list[McpManager] = []

    async def start(command: list[str], timeout: float) -> ToolRegistry:
        registry = ToolRegistry()
        cfg = McpServerConfig(command=command, timeout_seconds=timeout)
        manager = McpManager({"demo": cfg}, registry)
        managers.append(manager)
        await manager.start(wait=30)
        return registry

    yield start
    for manager in managers:
        await manager.stop()


async def test_a_call_during_the_restart_waits_and_runs(manager_for: Start) -> None:
    registry = await manager_for([sys.executable, SERVER], 30)
    old_pid = await kill_and_see_it_noticed(registry)
    result = await call(registry, "mcp_demo_add", a=1, b=1)  # no retry loop: this one call
    assert (result.content, result.is_error) == ("2", False)
    assert int((await call(registry, "mcp_demo_pid")).content) != old_pid


async def test_a_server_that_does_not_come_back_fails_the_call_in_bounded_time(
    manager_for: Start, tmp_path: Path
) -> None:
    flag = tmp_path / "may-start"
    flag.touch()
    script = f'test -e "{flag}" || exit 3; exec "{sys.executable}" "{SERVER}"'
    registry = await manager_for(["sh", "-c", script], 2)
    flag.unlink()  # every restart now exits at once
    await kill_and_see_it_noticed(registry)
    result = await call(registry, "mcp_demo_add", a=1, b=1)
    assert result.is_error and "did not (re)connect within 2 s" in result.content


async def test_a_slow_call_on_a_live_server_times_out(manager_for: Start) -> None:
    registry = await manager_for([sys.executable, SERVER], 1)
    result = await call(registry, "mcp_demo_nap", seconds=30)
    assert result.is_error and "timed out after 1 s" in result.content
    assert (await call(registry, "mcp_demo_add", a=2, b=2)).content == "4"  # still connected


async def test_larkbot_tools_lists_mcp_tools_and_says_what_did_not_connect(tmp_path: Path) -> None:
    servers = {
        "demo": {"command": [sys.executable, SERVER]},
        "gone": {"command": ["/nonexistent/mcp-server"]},
    }
    config = tmp_path / "config.yaml"  # YAML is a superset of JSON
    config.write_text(
        json.dumps({"storage": {"url": f"sqlite:///{tmp_path}/l.db"}, "mcp": {"servers": servers}})
    )
    # MCP_WAIT (10 s) bounds the wait for `gone`
    code, text, err = await larkbot(tmp_path, "tools", "--config", str(config), timeout=60)
    assert code == 0, err
    assert {"mcp_demo_add", "mcp_demo_echo"} <= {line.split(" ")[0] for line in text.splitlines()}
    assert "MCP server demo: connected" in text
    assert "MCP server gone: NOT connected within 10 s (" in text
