"""One firing: run the agent as the job's creator in `schedule:<id>`, then push the result."""

from __future__ import annotations

import asyncio
from datetime import datetime, tzinfo
from typing import Any, Protocol

from larkbot.config import Settings
from larkbot.context import RequestContext
from larkbot.events import FinalAnswer
from larkbot.logs import get_logger
from larkbot.scheduler.delivery import (
    AgentRunner,
    Notifier,
    answer_text,
    failure_text,
    fmt_time,
    message_uuid,
    missed_text,
    urgent_to,
)
from larkbot.scheduler.store import JobInfo


class ScheduleService(Protocol):
    """What a firing needs of the service that fired it (`service.py`), kept structural."""

    agent: AgentRunner | None
    notifier: Notifier | None

    @property
    def settings(self) -> Settings:
        """The current settings."""
        ...

    @property
    def tz(self) -> tzinfo:
        """The scheduler's time zone."""
        ...

    @property
    def running(self) -> bool:
        """Whether the service still runs."""
        ...

    async def is_owner(self, open_id: str) -> bool:
        """Whether `open_id` owns the bot now (re-checked at every firing)."""
        ...

    async def get(self, job_id: str) -> JobInfo | None:
        """The stored job, if any."""
        ...


log = get_logger(__name__)


async def job_context(
    service: ScheduleService, job_id: str, target: dict[str, str], creator: dict[str, Any]
) -> RequestContext:
    """The creator's identity and place; Lark ownership is re-checked against current config."""
    channel = target.get("channel") or "cli"
    open_id = str(creator.get("open_id") or "")
    if channel == "lark":
        is_owner = await service.is_owner(open_id)
    else:
        is_owner = bool(creator.get("is_owner"))
    return RequestContext(
        interface=channel if channel in ("cli", "web", "lark") else "cli",  # type: ignore[arg-type]
        session_id=f"schedule:{job_id}",
        sender_id=open_id or "local",
        is_owner=is_owner,
        chat_id=target.get("chat_id", ""),
        chat_type=target.get("chat_type", ""),
        scheduled=True,
    )


async def run_job(
    service: ScheduleService,
    *,
    job_id: str,
    prompt: str,
    target: dict[str, str],
    creator: dict[str, Any],
    fire_time: datetime,
) -> None:
    """Run the agent on the prompt; deliver the answer or the failure; never raise."""
    ctx = await job_context(service, job_id, target, creator)
    bound = log.bind(job_id=job_id, fire_time=fire_time.isoformat())
    bound.info("schedule_run_start", is_owner=ctx.is_owner)
    try:
        if service.agent is None:
            raise RuntimeError("no agent is attached to the scheduler")
        async with asyncio.timeout(service.settings.lark.turn_timeout_seconds):
            answer = await service.agent(ctx.session_id, prompt, ctx)
        text = answer_text(
            job_id, answer.text if isinstance(answer, FinalAnswer) else str(answer or "")
        )
        kind = "answer"
    except asyncio.CancelledError:
        raise
    except Exception as err:
        bound.exception("schedule_run_failed")
        reason = "timed out" if isinstance(err, TimeoutError) else str(err) or type(err).__name__
        text = failure_text(job_id, reason)
        kind = "failure"
    uid = message_uuid(job_id, fire_time)
    await deliver(service, target, text, uid, urgent_to(target, creator))
    bound.info("schedule_run_done", outcome=kind)


async def tell_missed(service: ScheduleService, job_id: str, scheduled: datetime) -> None:
    """Tell the job's chat, once, that a run was skipped because it was too late."""
    info = await service.get(job_id) if service.running else None
    if info is None:
        return
    text = missed_text(
        job_id,
        fmt_time(scheduled, service.tz),
        fmt_time(info.next_run_time, service.tz),
        service.settings.scheduler.misfire_grace_seconds,
    )
    await deliver(service, info.target, text, message_uuid(job_id, scheduled))


async def deliver(
    service: ScheduleService,
    target: dict[str, str],
    text: str,
    uid: str,
    urgent: tuple[str, ...] = (),
) -> None:
    """Post to the job's chat (a new message), or log when it has none (CLI jobs).

    `urgent`: people the message is buzzed to as well (an urgent job's creator)."""
    chat_id = target.get("chat_id", "")
    if target.get("channel") == "lark" and chat_id and service.notifier is not None:
        try:
            await service.notifier.notify(chat_id, text, uid, urgent)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("schedule_delivery_failed", chat_id=chat_id)
        return
    log.info("schedule_result", channel=target.get("channel"), text=text[:2000])
