"""Builds the core once (db, http client, settings, tools, provider, sessions) for any command."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

import tools.builtin
from larkbot import __version__
from larkbot.agent import Agent
from larkbot.config import LiveSettings, Settings
from larkbot.consent import ConsentProvider
from larkbot.logs import get_logger
from larkbot.memory import MemoryService
from larkbot.policy import AuditSink, Policy
from larkbot.policy.paths import ProtectedPaths
from larkbot.policy.secrets import SecretScrubber
from larkbot.providers.fallback import FallbackChain, build_provider
from larkbot.storage.db import Database
from larkbot.storage.feedback import FeedbackStore
from larkbot.storage.sessions import SessionStore
from larkbot.usage import UsageStore
from tools.mcp import McpManager
from tools.plugins import load_package_tools, load_plugins
from tools.registry import ToolRegistry
from tools.runtime import ToolRuntime

log = get_logger(__name__)


def new_http_client() -> httpx.AsyncClient:
    """The one shared HTTP client (connection pool) of the process."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, connect=10.0),
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        headers={"User-Agent": f"larkbot/{__version__}"},
    )


def build_registry(rt: ToolRuntime, plugins: bool = True) -> ToolRegistry:
    """A registry with the built-in tools and (unless disabled) the plugins; no network."""
    registry = ToolRegistry()
    load_package_tools(registry, rt, tools.builtin)
    if plugins:
        load_plugins(registry, rt)
    return registry


async def open_memory(db: Database, live: LiveSettings) -> MemoryService:
    """The memory service on the shared database; "local" is the sole configured owner."""

    def local_person() -> str:
        owners = live.get().owner.open_ids
        return owners[0] if len(owners) == 1 else "local"

    memory = MemoryService(db, lambda: live.get().memory, local_person)
    await memory.init()
    return memory


@dataclass
class Core:
    """Everything an agent needs, owned together and closed together."""

    settings: Settings
    live: LiveSettings
    db: Database
    http: httpx.AsyncClient
    runtime: ToolRuntime
    registry: ToolRegistry
    provider: FallbackChain
    store: SessionStore
    usage: UsageStore
    feedback: FeedbackStore
    policy: Policy
    owns_http: bool = True
    mcp: McpManager | None = None

    def agent(
        self,
        consent: ConsentProvider,
        interface: str | None = None,
        audit: AuditSink | None = None,
    ) -> Agent:
        """An Agent for `interface` (default: the runtime's) sharing this core's parts."""
        return Agent(
            self.provider,
            self.registry,
            self.store,
            consent,
            self.policy,
            self.live,
            interface or self.runtime.interface,
            audit=audit,
            scrubber=SecretScrubber(self.live.get),
            usage=self.usage,
            recall=self.memory,
        )

    @property
    def memory(self) -> MemoryService | None:
        """The long-term memory service (None when `memory.enabled` is false)."""
        service = self.runtime.services.get("memory")
        return service if isinstance(service, MemoryService) else None

    async def aclose(self) -> None:
        """Stop MCP servers, close the database and (if this core created it) the HTTP client."""
        if self.mcp is not None:
            await self.mcp.stop()
        knowledge = self.runtime.services.get("knowledge")
        if knowledge is not None:
            await knowledge.close()
        for tool in self.registry.all():  # tools holding their own clients (web_fetch)
            try:
                await tool.aclose()
            except Exception:
                log.warning("tool_close_failed", tool=tool.name, exc_info=True)
        if self.owns_http:
            await self.http.aclose()
        await self.db.close()


async def build_core(
    settings: Settings,
    interface: str = "cli",
    *,
    http: httpx.AsyncClient | None = None,
    plugins: bool = True,
    mcp: bool = True,
) -> Core:
    """Open the database, create the stores' tables, load the tools and connect MCP servers."""
    live = LiveSettings(settings)
    client = http or new_http_client()
    db = Database(settings.storage.url)
    try:
        store = SessionStore(db)
        await store.init()
        usage = UsageStore(db, settings.llm.prices)
        await usage.init()
        feedback = FeedbackStore(db)  # the table made here once, not on the web's read paths
        await feedback.init()
        rt = ToolRuntime(interface=interface, live=live, http=client, db=db)
        if settings.memory.enabled:
            rt.services["memory"] = await open_memory(db, live)
        registry = build_registry(rt, plugins)
    except BaseException:
        await db.close()
        if http is None:
            await client.aclose()
        raise
    provider = build_provider(settings.llm, client)
    policy = Policy(
        lambda: live.get().owner.share,
        protected=ProtectedPaths(live.get),
        workspace=lambda: live.get().workspace,
    )
    core = Core(
        settings,
        live,
        db,
        client,
        rt,
        registry,
        provider,
        store,
        usage,
        feedback,
        policy,
        owns_http=http is None,
    )
    if mcp and settings.mcp.servers:
        # a server that fails to start is logged and retried in the background, never fatal
        core.mcp = McpManager(settings.mcp.servers, registry)
        await core.mcp.start()
    return core


@asynccontextmanager
async def open_core(
    settings: Settings, interface: str = "cli", **kwargs: bool
) -> AsyncIterator[Core]:
    """`build_core` as an async context manager."""
    core = await build_core(settings, interface, plugins=kwargs.get("plugins", True))
    try:
        yield core
    finally:
        await core.aclose()
