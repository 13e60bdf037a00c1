"""Scheduled tasks: persistent APScheduler jobs that run the agent and push results to chats."""

from larkbot.scheduler.delivery import AgentRunner, Notifier
from larkbot.scheduler.service import ScheduleService
from larkbot.scheduler.store import JobInfo
from larkbot.scheduler.triggers import ScheduleError

__all__ = ["AgentRunner", "JobInfo", "Notifier", "ScheduleError", "ScheduleService"]
