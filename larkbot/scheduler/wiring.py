"""How `serve` and `chat` attach a scheduler: typed async context managers, started and stopped
by their owner (App for serve, the REPL for chat). The schedule_* tools find the running one in
`rt.services["scheduler"]`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from larkbot.agent import Agent
from larkbot.logs import get_logger
from larkbot.runtime_factory import Core
from larkbot.scheduler.delivery import AgentRunner, Notifier
from larkbot.scheduler.service import ScheduleService

log = get_logger(__name__)


@asynccontextmanager
async def leading_scheduler(
    core: Core,
    agent: Agent | AgentRunner,
    notifier: Notifier | None,
    owner_check: Callable[[str], Awaitable[bool]],
    drain_seconds: float,
) -> AsyncIterator[ScheduleService | None]:
    """`serve`'s scheduler: leader-capable, runs jobs on `agent`, delivers through `notifier`."""
    if not core.settings.scheduler.enabled:
        log.info("scheduler_disabled")
        yield None
        return
    svc = ScheduleService(core.live, core.db, agent=agent, notifier=notifier)
    svc.bind(owner_check=owner_check)
    await svc.start()
    core.runtime.services["scheduler"] = svc
    try:
        yield svc
    finally:
        core.runtime.services.pop("scheduler", None)
        await svc.stop(drain_seconds=drain_seconds)


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
