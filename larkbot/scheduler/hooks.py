"""Wiring the scheduler into `serve` (App start/stop hooks) and `chat` (a writer-only service)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from larkbot.logs import get_logger
from larkbot.scheduler.delivery import LarkNotifier
from larkbot.scheduler.service import ScheduleService

log = get_logger(__name__)


def install_scheduler(app: Any) -> None:
    """Add App hooks: start the service once the agent exists, stop it before storage closes."""

    async def start() -> None:
        await start_scheduler(app)

    async def stop() -> None:
        svc = app.core.runtime.services.pop("scheduler", None)
        if svc is not None:
            await svc.stop(drain_seconds=app.settings.server.drain_seconds)

    app.on_start.append(start)
    app.on_stop.append(stop)


async def start_scheduler(app: Any) -> ScheduleService | None:
    """Start a leader-capable service bound to App's agent, Lark client and owners."""
    if not app.settings.scheduler.enabled:
        log.info("scheduler_disabled")
        return None
    core = app.core
    notifier = LarkNotifier(app.client) if app.client is not None else None
    svc = ScheduleService(core.live, core.db, agent=app.agent, notifier=notifier)
    owners = getattr(app, "owners", None)
    if owners is not None:
        svc.bind(owner_check=owners.check)
    await svc.start()
    core.runtime.services["scheduler"] = svc
    return svc


@asynccontextmanager
async def writer_scheduler(core: Any) -> AsyncIterator[ScheduleService | None]:
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
