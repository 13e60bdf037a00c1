"""`larkbot tools [--interface cli|web|lark|fast]`: what each interface exposes, with its flags.

MCP servers of `mcp.servers` are connected as `serve` connects them (waiting at most
`MCP_WAIT` seconds), so their tools are listed too; one line per server says whether it did.
"""

from __future__ import annotations

import argparse
import asyncio

from larkbot.config import LiveSettings, Settings
from larkbot.logs import configure_logging
from larkbot.runtime_factory import build_registry, new_http_client
from larkbot.storage.db import Database
from tools.base import BaseTool
from tools.mcp import McpManager, McpServer, McpTool
from tools.registry import ToolRegistry
from tools.runtime import ToolRuntime

INTERFACES = ("cli", "web", "lark")
MCP_WAIT = 10.0  # seconds for the MCP servers to connect, as `serve` waits at start


def needs_consent(tool: BaseTool) -> bool:
    """True when the tool overrides `consent_check` (it may ask before running)."""
    return type(tool).consent_check is not BaseTool.consent_check


def flags(tool: BaseTool) -> str:
    """The tool's flags as words."""
    names = [
        ("side_effect", tool.side_effect),
        ("private_data", tool.private_data),
        ("consent", needs_consent(tool)),
        ("fast_path", tool.fast_path),
        ("no_compress", tool.no_compress),
    ]
    return ", ".join(n for n, on in names if on) or "-"


def format_table(registry: ToolRegistry, interface: str | None) -> str:
    """One row per tool: name, the interfaces it is registered on, flags."""
    tools = registry.for_interface(interface) if interface else registry.all()
    width = max([len(t.name) for t in tools] + [len("find_tools"), 4])
    head = f"{'TOOL'.ljust(width)}  cli web lark fast  flags"
    rows = [head, "-" * len(head)]
    for t in tools:
        marks = " ".join(("✓" if i in t.interfaces else "·").center(3) for i in INTERFACES)
        fast = ("✓" if t.fast_path else "·").center(4)
        rows.append(f"{t.name.ljust(width)}  {marks} {fast}  {flags(t)}")
    rows.append(f"{'find_tools'.ljust(width)}  (built into the loop; shown on the fast path)")
    rows.append(f"{len(tools)} tools" + (f" on {interface}" if interface else ""))
    return "\n".join(rows)


def mcp_line(server: McpServer, registry: ToolRegistry, wait: float) -> str:
    """Whether one MCP server connected, and how many tools it brought."""
    if server.connected.is_set():
        count = sum(isinstance(t, McpTool) and t.server is server for t in registry.all())
        return f"MCP server {server.name}: connected, {count} tools listed above"
    why = f" ({server.last_error})" if server.last_error else ""
    return (
        f"MCP server {server.name}: NOT connected within {wait:g} s{why}; its tools are not listed"
    )


async def with_mcp(settings: Settings, registry: ToolRegistry, interface: str | None) -> str:
    """The table with the MCP servers' tools (connected for the listing, then stopped)."""
    manager = McpManager(settings.mcp.servers, registry)
    await manager.start(MCP_WAIT)
    try:
        lines = [mcp_line(s, registry, MCP_WAIT) for s in manager.servers]
        return "\n".join([format_table(registry, interface), *lines])
    finally:
        await manager.stop()


async def listing(settings: Settings, interface: str | None) -> str:
    """The table for `interface`, with the registry built as serve builds it (MCP included)."""
    db = Database(settings.storage.url)
    async with new_http_client() as http:
        rt = ToolRuntime(
            interface=interface if interface in INTERFACES else "cli",
            live=LiveSettings(settings),
            http=http,
            db=db,
        )
        try:
            registry = build_registry(rt)
        finally:
            await db.close()
        if settings.mcp.servers:
            return await with_mcp(settings, registry, interface)
    return format_table(registry, interface)


def run_tools(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot tools`."""
    configure_logging("warning", "console")
    print(asyncio.run(listing(settings, getattr(args, "interface", None))))
    return 0
