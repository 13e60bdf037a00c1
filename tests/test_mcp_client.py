"""MCP client against a real MCP server written with the SDK, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from larkbot.config import McpServerConfig
from tests.processes import free_port
from tools.base import ToolResult
from tools.mcp import McpManager, McpServer, McpTool, tool_name
from tools.registry import ToolRegistry

SERVER = str(Path(__file__).parent / "fixtures" / "mcp_demo_server.py")


async def call(registry: ToolRegistry, name: str, **kwargs: object) -> ToolResult:
    tool = registry.get(name)
    assert isinstance(tool, McpTool), f"{name} not registered: {[t.name for t in registry.all()]}"
    result = await tool.run(**kwargs)
    assert isinstance(result, ToolResult)
    return result


@pytest.fixture
async def stdio_registry() -> AsyncIterator[ToolRegistry]:
    registry = ToolRegistry()
    cfg = McpServerConfig(command=[sys.executable, SERVER], timeout_seconds=10)
    manager = McpManager({"demo": cfg}, registry)
    await manager.start(wait=20)
    yield registry
    await manager.stop()


async def test_tools_registered_with_prefix_and_flags(stdio_registry: ToolRegistry) -> None:
    names = {t.name for t in stdio_registry.all()}
    assert {"mcp_demo_add", "mcp_demo_echo", "mcp_demo_boom", "mcp_demo_crash"} <= names
    echo, add = stdio_registry.get("mcp_demo_echo"), stdio_registry.get("mcp_demo_add")
    # Regression: a server claiming readOnlyHint was believed, so a shared MCP tool could give
    # a non-owner a side effect. Only the operator's `read_only` config counts.
    assert echo is not None and echo.side_effect  # annotated read-only by the server itself
    assert add is not None and add.side_effect and add.private_data
    assert add.parameters["properties"].keys() == {"a", "b"}
    assert echo.untrusted_output  # not marked trusted: its text raises the bar


def test_read_only_and_trusted_come_from_the_config() -> None:
    remote = SimpleNamespace(name="q", description="query", input_schema=None, annotations=None)
    cfg = McpServerConfig(command=["x"], read_only=True, trusted=True)
    tool = McpTool(McpServer("db", cfg, ToolRegistry()), remote, "mcp_db_q")
    assert not tool.side_effect and tool.private_data and not tool.untrusted_output
    assert tool.consent_check() is None


async def test_calls_return_results_and_errors(stdio_registry: ToolRegistry) -> None:
    assert (await call(stdio_registry, "mcp_demo_add", a=2, b=3)).content == "5"
    assert (await call(stdio_registry, "mcp_demo_echo", text="hi")).content == "echo: hi"
    image = await call(stdio_registry, "mcp_demo_pixel")
    assert image.content.startswith("[image: image/png") and not image.is_error
    boom = await call(stdio_registry, "mcp_demo_boom")
    assert boom.is_error and "Error executing tool boom" in boom.content


async def test_server_crash_is_survived_and_reconnected(stdio_registry: ToolRegistry) -> None:
    crashed = await call(stdio_registry, "mcp_demo_crash")
    assert crashed.is_error and "reconnect" in crashed.content
    deadline = time.monotonic() + 20
    while True:  # bounded: the supervisor respawns the server within its 1 s backoff
        result = await call(stdio_registry, "mcp_demo_add", a=1, b=1)
        if not result.is_error or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert result.content == "2" and not result.is_error


async def test_failing_server_is_skipped() -> None:
    registry = ToolRegistry()
    manager = McpManager({"broken": McpServerConfig(command=["/nonexistent/mcp-server"])}, registry)
    await manager.start(wait=2)
    assert registry.all() == []
    await manager.stop()


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(10)


async def test_streamable_http(http_server: str) -> None:
    registry = ToolRegistry()
    cfg = McpServerConfig(url=http_server, headers={"X-Test": "1"}, timeout_seconds=10)
    manager = McpManager({"web": cfg}, registry)
    await manager.start(wait=20)
    try:
        assert (await call(registry, "mcp_web_add", a=20, b=22)).content == "42"
        assert (await call(registry, "mcp_web_boom")).is_error
    finally:
        await manager.stop()
    assert registry.get("mcp_web_add") is None


def test_tool_names_are_sanitised_bounded_and_unique() -> None:
    assert tool_name("my server", "get.file", set()) == "mcp_my_server_get_file"
    long = tool_name("s", "x" * 100, set())
    assert len(long) == 64
    first = tool_name("a", "b", set())
    assert tool_name("a", "b", {first}) != first


async def test_agent_calls_mcp_tool_through_the_loop(home: Path, fake_llm: object) -> None:
    """Transparent to the loop: build_core connects the server, the model calls its tool."""
    from larkbot.config import parse_settings
    from larkbot.events import FinalAnswer, ToolFinished
    from larkbot.runtime_factory import build_core
    from tests.core_helpers import ScriptedConsent, ctx
    from tests.fakes.llm import FakeLLM

    assert isinstance(fake_llm, FakeLLM)
    settings = parse_settings(
        {
            "llm": {"base_url": fake_llm.base_url, "api_key": "k"},
            "mcp": {"servers": {"demo": {"command": [sys.executable, SERVER]}}},
        }
    )
    core = await build_core(settings, "cli", plugins=False)
    try:
        fake_llm.reply_tools(("mcp_demo_add", {"a": 40, "b": 2})).reply_text("It is 42.")
        consent = ScriptedConsent()
        agent = core.agent(consent)
        events = [e async for e in agent.stream_chat("s-mcp", "add 40 and 2", ctx("s-mcp"))]
    finally:
        await core.aclose()
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(e.name, e.content, e.is_error) for e in finished] == [("mcp_demo_add", "42", False)]
    assert consent.asked and consent.asked[0].tool.name == "mcp_demo_add"  # side effect: asked once
    assert isinstance(events[-1], FinalAnswer) and events[-1].text == "It is 42."


def established_to(port: int) -> int:
    """Open TCP connections towards `port` (Linux /proc; the client side of each pair)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as fh:
            for row in fh.read().splitlines()[1:]:
                fields = row.split()
                if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


async def test_mcp_http_client_closed_when_the_session_ends(http_server: str) -> None:
    """Regression: the httpx2 client handed to the SDK was never closed (a pool per session)."""
    port = int(http_server.rsplit(":", 1)[1].split("/")[0])
    registry = ToolRegistry()
    manager = McpManager({"web": McpServerConfig(url=http_server, timeout_seconds=10)}, registry)
    await manager.start(wait=20)
    try:
        assert (await call(registry, "mcp_web_add", a=1, b=2)).content == "3"
    finally:
        await manager.stop()
    assert established_to(port) == 0
