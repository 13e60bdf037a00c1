"""Seams of a job run: the agent to call, where results go, and how messages are worded."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any, Protocol

from larkbot.agent import Agent
from larkbot.context import RequestContext


class AnswerLike(Protocol):
    """What the agent returns (`FinalAnswer`): only its text is used here."""

    text: str


class AgentRunner(Protocol):
    """`Agent.run(session_id, user_input, ctx)` or anything shaped like it."""

    async def __call__(self, session_id: str, user_input: str, ctx: RequestContext) -> Any:
        """Run one agent turn and return its final answer."""


class RunFailed(Exception):
    """The agent's turn ended in an error event (the model or the loop failed)."""


def as_runner(agent: Agent | AgentRunner) -> AgentRunner:
    """An AgentRunner for an Agent: its stream, raising RunFailed on an ErrorEvent.

    `Agent.run` folds errors into the answer text; a scheduled run must tell a failure from an
    answer so the chat hears "this run failed" rather than the error posing as the result.
    """
    if not isinstance(agent, Agent):
        return agent  # already a plain runner (tests, adapters)
    stream = agent.stream_chat

    async def run(session_id: str, user_input: str, ctx: RequestContext) -> Any:
        from larkbot.events import ErrorEvent, FinalAnswer

        final: Any = None
        async for event in stream(session_id, user_input, ctx):
            if isinstance(event, ErrorEvent):
                raise RunFailed(event.message)
            if isinstance(event, FinalAnswer):
                final = event
        return final

    return run


class Notifier(Protocol):
    """Sends a new (not reply) message to a chat; `uuid` makes a retried send idempotent.

    The scheduler knows no channel: the composition root hands it one (the Lark channel's
    `LarkNotifier`, in its job_delivery module). `urgent`: the people (open_ids) the message is
    buzzed to as well (an urgent job's creator); empty for an ordinary job."""

    async def notify(self, chat_id: str, text: str, uuid: str, urgent: Sequence[str] = ()) -> None:
        """Post `text` to `chat_id`; buzz it to `urgent` when given."""


def message_uuid(job_id: str, fire_time: datetime) -> str:
    """The Lark `uuid` (<= 50 chars) of one tick's message, whatever it says (answer, failure,
    missed): a re-run of a tick whose first message Lark already took cannot post a second
    one within Lark's one-hour dedup window."""
    key = f"{job_id}|{round(fire_time.timestamp() * 1_000_000)}"
    return "sch-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def urgent_to(target: dict[str, str], creator: dict[str, Any]) -> tuple[str, ...]:
    """Whom a job's message is buzzed to: its creator, when it was created `urgent`."""
    open_id = str(creator.get("open_id") or "")
    return (open_id,) if target.get("urgent") == "true" and open_id else ()


def fmt_time(when: datetime | None, tz: tzinfo) -> str:
    """A time as users see it: in the configured zone, with the zone's name."""
    if when is None:
        return "paused"
    return when.astimezone(tz).strftime("%Y-%m-%d %H:%M ") + str(tz)


_JOB_IN_TEXT = re.compile(r"定时任务「([\w.:-]{1,64})」")


def job_of(text: str) -> str | None:
    """The job a proactive message is about (the words of `answer_text` and its siblings)."""
    found = _JOB_IN_TEXT.search(text)
    return found.group(1) if found else None


def answer_text(job_id: str, answer: str) -> str:
    """The proactive message of a successful run."""
    return f"⏰ 定时任务「{job_id}」\n\n{answer.strip() or '(no answer)'}"


def failure_text(job_id: str, reason: str) -> str:
    """The message posted when a run failed; the job stays scheduled."""
    return f"⚠️ 定时任务「{job_id}」本次运行失败：{reason[:300]}\n任务仍在计划中，下次会照常运行。"


def missed_text(job_id: str, missed: str, next_run: str, grace: int) -> str:
    """The one message telling a chat that a run was skipped after downtime."""
    return (
        f"⏰ 定时任务「{job_id}」错过了 {missed} 的运行"
        f"（服务当时不在线，超过 {grace} 秒宽限），已跳过。下次运行：{next_run}"
    )
