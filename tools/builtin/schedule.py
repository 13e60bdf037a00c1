"""schedule_create / schedule_list / schedule_remove: scheduled agent runs pushed to the chat."""

from __future__ import annotations

import re
from typing import Any

from larkbot.context import RequestContext
from larkbot.scheduler import ScheduleError, ScheduleService
from larkbot.scheduler.delivery import fmt_time
from tools.base import BaseTool, ContextTool, ToolResult
from tools.runtime import ToolRuntime

_JOB_ID = re.compile(r"^[\w.:-]{1,64}$")


def _lang(ctx: RequestContext) -> str:
    """The schedule's wording: Chinese for Lark readers, English in the terminal and the web."""
    return "zh" if ctx.interface == "lark" else "en"


class _ScheduleTool(ContextTool):
    """Shared lookup of the live ScheduleService (registered by `serve` and `chat`)."""

    def __init__(self, rt: ToolRuntime) -> None:
        self._rt = rt

    def service(self) -> ScheduleService:
        """The running scheduler service, or ScheduleError saying why there is none."""
        svc = self._rt.services.get("scheduler")
        if svc is None or not svc.running:
            raise ScheduleError(
                "the scheduler is not running in this process (scheduler.enabled=false, "
                "or this interface has none); operators can use `larkbot jobs`"
            )
        return svc  # type: ignore[no-any-return]


class ScheduleCreateTool(_ScheduleTool):
    """schedule_create: a cron or every-N-minutes job whose answer is posted to this chat."""

    name = "schedule_create"
    description = (
        "Create a scheduled task: at each time the agent runs `prompt` in its own session and the "
        "answer is posted to this chat. Give exactly one of `cron` (5 fields: minute hour day "
        "month weekday, e.g. '0 9 * * *' = every day 09:00, '0 9 * * 1-5' = weekdays) or "
        "`interval_minutes` (>= 1). Times are in the configured timezone. `urgent`: in Lark, "
        "each run's message is also buzzed (urgent_app) to you, for alerts that must not wait."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "job_id": {"type": "string", "description": "unique id, e.g. daily-report"},
            "prompt": {"type": "string", "description": "the instruction run at each time"},
            "cron": {"type": "string", "description": "5-field cron expression"},
            "interval_minutes": {"type": "integer", "minimum": 1},
            "urgent": {
                "type": "boolean",
                "description": "buzz each run's message to the creator (Lark urgent_app)",
            },
        },
        "required": ["job_id", "prompt"],
    }
    side_effect = True

    async def run_with(self, ctx: RequestContext, **kw: Any) -> str | ToolResult:
        """Validate and store the job, recording who asked and where."""
        job_id, prompt = str(kw.get("job_id", "")).strip(), str(kw.get("prompt", "")).strip()
        cron, minutes = kw.get("cron") or None, kw.get("interval_minutes")
        target = {"channel": ctx.interface, "chat_id": ctx.chat_id, "thread_id": ctx.thread_id}
        if kw.get("urgent") is True:
            target["urgent"] = "true"  # delivery buzzes the creator (scheduler/delivery.py)
        if ctx.interface == "lark" and not ctx.is_owner:
            return ToolResult("only the bot's owners can create scheduled tasks", is_error=True)
        if not _JOB_ID.match(job_id):
            return ToolResult(
                "job_id must be 1-64 letters, digits, '_', '-', '.' or ':'", is_error=True
            )
        if not prompt:
            return ToolResult("prompt must not be empty", is_error=True)
        try:
            svc = self.service()
            info = await svc.create(
                job_id,
                prompt,
                cron=cron,
                interval_minutes=minutes,
                target=target,
                creator={"open_id": ctx.sender_id, "is_owner": ctx.is_owner},
            )
        except ScheduleError as err:
            return ToolResult(str(err), is_error=True)
        where = "this chat" if info.target.get("chat_id") else "the log (no chat)"
        buzz = " and are buzzed to you" if info.target.get("urgent") == "true" else ""
        return (
            f"Created {info.id}: {info.words(_lang(ctx))}; next run "
            f"{fmt_time(info.next_run_time, svc.tz)}; results go to {where}{buzz}."
        )


class ScheduleListTool(_ScheduleTool):
    """schedule_list: every scheduled task with its next run time."""

    name = "schedule_list"
    description = "List scheduled tasks: id, schedule in words, next run time, target chat, prompt."
    private_data = True

    async def run_with(self, ctx: RequestContext, **kw: Any) -> str | ToolResult:
        """One line per job."""
        try:
            svc = self.service()
            jobs = await svc.list()
        except ScheduleError as err:
            return ToolResult(str(err), is_error=True)
        if not jobs:
            return "No scheduled tasks."
        return f"{len(jobs)} scheduled task(s), times in {svc.tz}:\n" + "\n".join(
            j.line(svc.tz, _lang(ctx)) for j in jobs
        )


class ScheduleRemoveTool(_ScheduleTool):
    """schedule_remove: delete a scheduled task by id."""

    name = "schedule_remove"
    description = "Delete a scheduled task by its job_id (see schedule_list)."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"job_id": {"type": "string"}},
        "required": ["job_id"],
    }
    side_effect = True

    async def run_with(self, ctx: RequestContext, **kw: Any) -> str | ToolResult:
        """Remove the job or say that there is none."""
        job_id = str(kw.get("job_id", "")).strip()
        if ctx.interface == "lark" and not ctx.is_owner:
            return ToolResult("only the bot's owners can remove scheduled tasks", is_error=True)
        try:
            removed = await self.service().remove(job_id)
        except ScheduleError as err:
            return ToolResult(str(err), is_error=True)
        if not removed:
            return ToolResult(f"no scheduled task {job_id!r}; see schedule_list", is_error=True)
        return f"Removed {job_id}; it will not run again."


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The three schedule tools; they find the service in `rt.services` at call time."""
    return [ScheduleCreateTool(rt), ScheduleListTool(rt), ScheduleRemoveTool(rt)]
