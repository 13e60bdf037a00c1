"""The scheduler as a part of `serve` (leader-capable) and of `chat` (a writer-only service)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from larkbot.agent import Agent
from larkbot.lark.client import LarkClient
from larkbot.logs import get_logger
from larkbot.runtime_factory import Core
from larkbot.scheduler.delivery import LarkNotifier
from larkbot.scheduler.service import ScheduleService

log = get_logger(__name__)


@asynccontextmanager
async def serving_scheduler(
    core: Core,
    agent: Agent,
    client: LarkClient | None,
    owner_check: Callable[[str], Awaitable[bool]],
) -> AsyncIterator[ScheduleService | None]:
    """A service that runs due jobs through `agent` and posts results to Lark; stopped on exit."""
    if not core.settings.scheduler.enabled:
        log.info("scheduler_disabled")
        yield None
        return
    notifier = LarkNotifier(client) if client is not None else None
    svc = ScheduleService(core.live, core.db, agent=agent, notifier=notifier)
    svc.bind(owner_check=owner_check)
    await svc.start()
    core.runtime.services["scheduler"] = svc
    try:
        yield svc
    finally:
        core.runtime.services.pop("scheduler", None)
        await svc.stop(drain_seconds=core.settings.server.drain_seconds)


@asynccontextmanager
async def writer_scheduler(core: Core) -> AsyncIterator[ScheduleService | None]:
    """For `larkbot chat`: schedule_* tools write the shared store; jobs fire where serve runs."""
    if not core.settings.scheduler.enabled:
        yield None
        return
    svc = ScheduleService(core.live, core.db, role="writer")
    await svc.start()
    core.runtime.services["scheduler"] = svc
    try:
        yield svc
    finally:
        core.runtime.services.pop("scheduler", None)
        await svc.stop()
