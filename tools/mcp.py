"""MCP client: each configured server's tools registered as `mcp_<server>_<tool>` BaseTools.

Every server is held open by a supervisor task (the SDK's context managers must be entered and
left in one task); the transport's end (tools/mcp_watch.py), a failed call or a failed ping
marks the connection dead and the supervisor reconnects with backoff, re-listing and
re-registering the server's tools. A call made while it reconnects waits for the new connection
(within the server's `timeout_seconds`) and then runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
from typing import Any

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.jsonrpc import CONNECTION_CLOSED

from larkbot.config import McpServerConfig
from larkbot.logs import get_logger
from larkbot.tasks import cancel_and_wait
from tools.base import BaseTool, ToolResult
from tools.mcp_stderr import StderrToLog
from tools.mcp_watch import watched
from tools.registry import ToolRegistry

log = get_logger("larkbot.mcp")
MAX_NAME = 64
PING_INTERVAL = 30.0
MAX_BACKOFF = 60.0
MAX_PAGES = 100  # of tools/list
STOP_TIMEOUT = 10.0


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """`mcp_<server>_<tool>`, sanitised to [A-Za-z0-9_-], at most 64 chars, unique in `taken`."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp_{server}_{tool}")
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
    if len(name) > MAX_NAME or name in taken:
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def result_text(result: Any) -> str:
    """Turn a CallToolResult's content blocks and structured content into one string."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind}: {block.mime_type}, {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.uri} ({block.name})]")
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            parts.append(text if text is not None else f"[binary resource: {res.uri}]")
    if result.structured_content is not None and not parts:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts) if parts else "(no content)"


class McpTool(BaseTool):
    """One remote MCP tool, transparent to the agent loop."""

    private_data = True  # an MCP server may read the owner's data: owner-only unless shared
    untrusted_output = True  # unless `mcp.servers.<name>.trusted`

    def __init__(self, server: McpServer, remote: Any, name: str) -> None:
        self.server = server
        self.remote_name: str = remote.name
        self.name = name
        self.description = f"[MCP {server.name}] {remote.description or remote.name}"[:1024]
        self.parameters = remote.input_schema or {"type": "object", "properties": {}}
        # The operator's config, never the server's own `readOnlyHint`, decides: a server may
        # claim anything about itself. Read-only tools can be opened by owner.share.
        self.side_effect = not server.config.read_only
        self.untrusted_output = not server.config.trusted
        self.timeout = server.config.timeout_seconds + 5

    def consent_check(self, **kwargs: Any) -> str | None:
        """Side-effecting MCP calls are asked for once per session (scope: tool name)."""
        if not self.side_effect:
            return None
        return f"Call MCP tool {self.remote_name} on server {self.server.name}"

    async def run(self, **kwargs: Any) -> str | ToolResult:
        """Forward the call to the server."""
        return await self.server.call(self.remote_name, kwargs)


class McpServer:
    """A supervised connection to one MCP server."""

    def __init__(self, name: str, config: McpServerConfig, registry: ToolRegistry) -> None:
        self.name = name
        self.config = config
        self.registry = registry
        self.client: Client | None = None
        self.connected = asyncio.Event()  # set while `client` is live (calls may be sent)
        self.last_error = ""  # why the last connection attempt failed, for `larkbot tools`
        self._dead = asyncio.Event()
        self._stopping = False
        self._registered: list[str] = []
        self._task: asyncio.Task[None] | None = None

    def _target(self, stack: contextlib.AsyncExitStack) -> Any:
        """The stdio parameters, or the HTTP transport over a client `stack` closes."""
        cfg = self.config
        if cfg.url:
            # The SDK leaves a client it was given open: the session's exit stack closes it,
            # or every reconnect would leak a connection pool.
            http = httpx2.AsyncClient(headers=cfg.headers, timeout=cfg.timeout_seconds)
            stack.push_async_callback(http.aclose)
            return watched(streamable_http_client(cfg.url, http_client=http), self._mark_dead)
        argv = [cfg.command] if isinstance(cfg.command, str) else list(cfg.command or [])
        argv += cfg.args
        if not argv:
            raise ValueError(f"mcp.servers.{self.name}: set `command` (stdio) or `url` (HTTP)")
        env = {**get_default_environment(), **cfg.env}
        stderr = StderrToLog(self.name)
        stack.callback(stderr.close)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
        return watched(stdio_client(params, errlog=stderr.writer), self._mark_dead)

    def _mark_dead(self) -> None:
        """The connection is gone: no new call is sent on it, the supervisor reconnects."""
        self.connected.clear()
        self._dead.set()

    async def start(self, wait: float = 10.0) -> None:
        """Start the supervisor; wait (bounded) for the first connection."""
        self._task = asyncio.create_task(self._supervise(), name=f"mcp:{self.name}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.connected.wait(), wait)
        if not self.connected.is_set():
            log.warning("mcp_server_not_ready", server=self.name, waited=wait)

    async def stop(self) -> None:
        """Disconnect and unregister this server's tools."""
        self._stopping = True
        self._mark_dead()
        if self._task:
            try:
                async with asyncio.timeout(STOP_TIMEOUT):  # a server that will not exit
                    await cancel_and_wait(self._task)
            except TimeoutError:
                log.warning("mcp_server_stop_slow", server=self.name, waited=STOP_TIMEOUT)
        self._unregister()

    async def _supervise(self) -> None:
        backoff = 1.0
        while not self._stopping:
            try:
                await self._session()
                backoff = 1.0
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if self._stopping or (task is not None and task.cancelling()):
                    raise
                if task is not None:
                    task.uncancel()  # anyio leaked a cancel scope from a dead transport
            except Exception as err:
                self.last_error = str(err)[:300] or type(err).__name__
                log.warning("mcp_server_failed", server=self.name, error=self.last_error)
            if self._stopping:
                break
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    async def _session(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            target = self._target(stack)
            client = await stack.enter_async_context(
                Client(target, read_timeout_seconds=self.config.timeout_seconds, cache=None)
            )
            await self._serve(client)

    async def _serve(self, client: Client) -> None:
        """List and register the tools, then hold the connection until it is marked dead."""
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):  # a server repeating its cursor must not hang the session
            page = await asyncio.wait_for(
                client.list_tools(cursor=cursor), self.config.timeout_seconds
            )
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self._register(tools)
        self.client = client
        self.last_error = ""
        self._dead.clear()
        self.connected.set()
        log.info("mcp_server_connected", server=self.name, tools=len(tools))
        try:
            while not self._dead.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._dead.wait(), PING_INTERVAL)
                if not self._dead.is_set():
                    await asyncio.wait_for(client.send_ping(), self.config.timeout_seconds)
        finally:
            self.client = None
            self.connected.clear()

    def _register(self, remote_tools: list[Any]) -> None:
        self._unregister()
        taken = {t.name for t in self.registry.all()}
        for remote in remote_tools:
            name = tool_name(self.name, remote.name, taken)
            taken.add(name)
            self.registry.register(McpTool(self, remote, name))
            self._registered.append(name)

    def _unregister(self) -> None:
        for name in self._registered:
            self.registry.unregister(name)
        self._registered = []

    async def call(self, remote_name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a remote tool, first waiting for a server that is reconnecting (one deadline of
        `timeout_seconds` for both); transport failures trigger a reconnect and become errors."""
        timeout = self.config.timeout_seconds
        client: Client | None = None
        try:
            async with asyncio.timeout(timeout):
                await self.connected.wait()  # set only while `client` is live
                client = self.client
                if client is None:  # stopped meanwhile
                    return ToolResult(f"MCP server {self.name!r} is not connected", True)
                result = await client.call_tool(
                    remote_name, arguments, read_timeout_seconds=timeout
                )
        except TimeoutError:
            if client is None:
                why = f": {self.last_error}" if self.last_error else ""
                return ToolResult(
                    f"MCP server {self.name!r} did not (re)connect within {timeout:g} s{why}",
                    True,
                )
            return ToolResult(f"MCP tool {remote_name} timed out after {timeout:g} s", True)
        except MCPError as err:
            if err.code != CONNECTION_CLOSED:
                return ToolResult(f"MCP server {self.name!r} refused the call: {err}", True)
            return self._lost(remote_name, err)
        except Exception as err:
            return self._lost(remote_name, err)
        return ToolResult(result_text(result), is_error=bool(result.is_error))

    def _lost(self, remote_name: str, err: Exception) -> ToolResult:
        self._mark_dead()
        log.warning("mcp_call_failed", server=self.name, tool=remote_name, error=str(err)[:300])
        return ToolResult(
            f"MCP server {self.name!r} disconnected during the call ({err}); "
            "it is being reconnected — try again shortly",
            True,
        )


class McpManager:
    """Starts every server of `mcp.servers`; a server that fails is logged and retried later."""

    def __init__(self, servers: dict[str, McpServerConfig], registry: ToolRegistry) -> None:
        self.servers = [McpServer(name, cfg, registry) for name, cfg in servers.items()]

    async def start(self, wait: float = 10.0) -> None:
        """Connect to all servers concurrently, waiting at most `wait` seconds."""
        await asyncio.gather(*(s.start(wait) for s in self.servers))

    async def stop(self) -> None:
        """Disconnect from all servers."""
        await asyncio.gather(*(s.stop() for s in self.servers))
