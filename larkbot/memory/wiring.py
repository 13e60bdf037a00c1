"""How `serve` attaches the nightly consolidation: the model, leadership and a notifier are
handed in by the composition root (this package imports no channel)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from larkbot.config import Settings
from larkbot.memory.consolidate import Consolidator, Notify
from larkbot.memory.nightly import Nightly
from larkbot.memory.service import MemoryService
from larkbot.providers.base import ChatProvider
from tools.runtime import ToolRuntime

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class Core(Protocol):
    """What the nightly pass reads of `serve`'s core (`runtime_factory.Core` is one)."""

    @property
    def settings(self) -> Settings:
        """The process's settings."""
        ...

    @property
    def runtime(self) -> ToolRuntime:
        """The tools' shared services (the memory service among them)."""
        ...

    @property
    def provider(self) -> ChatProvider:
        """The model the consolidation asks."""
        ...


class Leader(Protocol):
    """The scheduler as leadership is concerned: its instance id and whether it leads."""

    id: str

    @property
    def is_leader(self) -> bool:
        """True while this replica runs the scheduled work."""
        ...


def has_model(settings: Settings) -> bool:
    """An LLM is configured: a key, or an endpoint of its own (a local model needs no key)."""
    llm = settings.llm
    return bool(llm.api_key.get_secret_value()) or llm.base_url.rstrip("/") != DEFAULT_BASE_URL


def consolidator(
    service: MemoryService, provider: ChatProvider, notify: Notify | None
) -> Consolidator:
    """A Consolidator asking `provider` (no tools) and telling people through `notify`."""

    async def complete(messages: list[dict[str, Any]]) -> str:
        return (await provider.complete(messages, None)).text

    return Consolidator(service.store, complete, notify)


@asynccontextmanager
async def memory_nightly(
    core: Core, scheduler: Leader | None, notify: Notify | None
) -> AsyncIterator[Nightly | None]:
    """The nightly pass of `core`'s memory on the replica leading `scheduler`; None when off."""
    settings = core.settings
    service = core.runtime.services.get("memory")
    cfg = settings.memory
    if not isinstance(service, MemoryService) or not cfg.consolidate or not has_model(settings):
        yield None
        return
    tz = settings.scheduler.zone() or ZoneInfo("UTC")
    leading = (lambda: scheduler.is_leader) if scheduler is not None else (lambda: True)
    holder = scheduler.id if scheduler is not None else "single"
    nightly = Nightly(
        consolidator(service, core.provider, notify), cfg.consolidate_at, tz, leading, holder
    )
    nightly.start()
    try:
        yield nightly
    finally:
        await nightly.stop()
