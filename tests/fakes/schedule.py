"""Seam fakes for scheduler tests: a recording notifier and a scripted agent runner."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larkbot.config import Settings, parse_settings
from larkbot.context import RequestContext


@dataclass
class Sent:
    """One proactive message."""

    chat_id: str
    text: str
    uuid: str
    urgent: tuple[str, ...] = ()  # the people it was buzzed to


class RecordingNotifier:
    """Notifier that records messages and lets a test await the next one (bounded)."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []
        self._queue: asyncio.Queue[Sent] = asyncio.Queue()

    async def notify(self, chat_id: str, text: str, uuid: str, urgent: Sequence[str] = ()) -> None:
        """Record one message."""
        msg = Sent(chat_id, text, uuid, tuple(urgent))
        self.sent.append(msg)
        self._queue.put_nowait(msg)

    async def next(self, timeout: float = 5.0) -> Sent:
        """The next message sent, waiting at most `timeout` seconds."""
        return await asyncio.wait_for(self._queue.get(), timeout)

    def about(self, job_id: str) -> list[Sent]:
        """Messages that mention a job id."""
        return [m for m in self.sent if f"「{job_id}」" in m.text]


@dataclass
class Answer:
    """Shaped like FinalAnswer."""

    text: str


@dataclass
class ScriptedAgent:
    """AgentRunner that answers from a script (an Exception entry makes that run fail)."""

    script: list[str | Exception] = field(default_factory=list)
    calls: list[tuple[str, str, RequestContext]] = field(default_factory=list)

    async def __call__(self, session_id: str, user_input: str, ctx: RequestContext) -> Answer:
        """Record the call and play the next scripted outcome (default: echo the prompt)."""
        self.calls.append((session_id, user_input, ctx))
        outcome: Any = self.script.pop(0) if self.script else f"done: {user_input}"
        if isinstance(outcome, Exception):
            raise outcome
        return Answer(outcome)

    def runs_of(self, job_id: str) -> int:
        """How many runs a job's session had."""
        return sum(1 for sid, _, _ in self.calls if sid == f"schedule:{job_id}")


def scheduler_settings(home: Path, **scheduler: Any) -> Settings:
    """Settings on a SQLite file under `home` with one owner (ou_owner)."""
    raw: dict[str, Any] = {"owner": {"open_ids": ["ou_owner"]}}
    if scheduler:
        raw["scheduler"] = scheduler
    settings = parse_settings(raw)
    assert str(home) in settings.storage.url
    return settings


LARK_TARGET = {"channel": "lark", "chat_id": "oc_chat", "thread_id": ""}
OWNER = {"open_id": "ou_owner", "is_owner": True}


@asynccontextmanager
async def service_factory(
    default: Callable[[], Settings], poll_seconds: float
) -> AsyncIterator[Callable[..., Any]]:
    """Build ScheduleServices, each on its own Database (like a replica); stop them after."""
    from larkbot.scheduler import ScheduleService
    from larkbot.storage.db import Database

    made: list[ScheduleService] = []
    dbs: list[Database] = []

    def factory(settings: Settings | None = None, **kw: Any) -> ScheduleService:
        settings = settings or default()
        db = Database(settings.storage.url)
        dbs.append(db)
        kw.setdefault("poll_seconds", poll_seconds)
        kw.setdefault("lease_seconds", 1.0)
        svc = ScheduleService(settings, db, **kw)
        made.append(svc)
        return svc

    try:
        yield factory
    finally:
        for svc in made:
            await svc.stop(drain_seconds=1)
        for db in dbs:
            await db.close()
