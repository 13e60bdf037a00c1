"""Web runs: each `/chat` turn runs as a task of its own with an event log clients follow.

The turn does not belong to the HTTP request: a client that goes away leaves it running (its
answer is stored in the session as usual) and may come back with `Last-Event-ID: <run>:<seq>`
to get the events it missed. Logs are in memory on the replica running the turn (route a
reconnect to the same replica, e.g. sticky by run id) and kept for `KEEP_SECONDS` after the end.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from larkbot.tasks import cancel_and_wait
from tools.base import Attachment

MAX_EVENTS = 20_000  # per run; older events are dropped (a resume from before them is refused)
KEEP_SECONDS = 600.0
MAX_ACTIVE = 8


class TooManyRuns(Exception):
    """MAX_ACTIVE runs are going on already."""


class RunIdTaken(Exception):
    """A client named its run with the id of a run this replica still keeps."""


class EventsLost(Exception):
    """The resume point is older than what the run's log still holds."""


@dataclass
class Run:
    """One turn's event log (serialised AG-UI JSON, numbered from 1) and its task."""

    run_id: str
    session_id: str
    title: str = ""  # the message that started it (a new session has no stored title yet)
    events: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))
    seq: int = 0
    done: bool = False
    ended_at: float = 0.0
    task: asyncio.Task[None] | None = None
    custom: Callable[[str, Any], None] | None = None  # emit a CUSTOM event (consent cards)
    attachments: list[Attachment] = field(default_factory=list)  # files tools made, by index
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def emit(self, data: str) -> int:
        """Append one event; wake the followers."""
        self.seq += 1
        self.events.append((self.seq, data))
        self._changed.set()
        self._changed = asyncio.Event()
        return self.seq

    def finish(self) -> None:
        """No more events will come."""
        self.done = True
        self.ended_at = time.monotonic()
        self._changed.set()

    def after(self, seq: int) -> list[tuple[int, str]]:
        """The logged events numbered above `seq`."""
        if self.events and seq < self.events[0][0] - 1:
            raise EventsLost(f"events after {seq} are no longer kept")
        return [e for e in self.events if e[0] > seq]

    async def wait(self, seq: int, timeout: float) -> bool:
        """Wait until an event after `seq` exists or the run ended; False on timeout."""
        changed = self._changed
        if self.seq > seq or self.done:
            return True
        try:
            await asyncio.wait_for(changed.wait(), timeout)
        except TimeoutError:
            return False
        return True


class RunRegistry:
    """The runs of this replica: start, look up, stop, forget old ones."""

    def __init__(self, max_active: int = MAX_ACTIVE) -> None:
        self.max_active = max_active
        self._runs: dict[str, Run] = {}

    def active(self) -> list[Run]:
        """Runs still going."""
        return [r for r in self._runs.values() if not r.done]

    def get(self, run_id: str) -> Run | None:
        """A known run (running or recently ended)."""
        return self._runs.get(run_id)

    def by_session(self, session_id: str) -> Run | None:
        """The running run of a session (turns of one session run one at a time)."""
        return next((r for r in self.active() if r.session_id == session_id), None)

    def start(
        self,
        session_id: str,
        body: Callable[[Run], Awaitable[None]],
        title: str = "",
        run_id: str | None = None,
    ) -> Run:
        """Create a run (named `run_id`, else a fresh id) and start `body(run)` as its task."""
        self._forget_old()
        if len(self.active()) >= self.max_active:
            raise TooManyRuns(f"{self.max_active} turns are running; try again shortly")
        if run_id is not None and run_id in self._runs:
            raise RunIdTaken(f"run id {run_id!r} is already used; send a new one")
        run = Run(run_id or f"run_{uuid.uuid4().hex[:16]}", session_id=session_id, title=title)

        async def main() -> None:
            try:
                await body(run)
            finally:
                run.finish()

        self._runs[run.run_id] = run
        run.task = asyncio.create_task(main(), name=f"web-{run.run_id}")
        return run

    async def stop(self, run_id: str) -> bool:
        """Cancel a running run; False when unknown or already ended."""
        run = self._runs.get(run_id)
        if run is None or run.done or run.task is None:
            return False
        await cancel_and_wait(run.task)
        return True

    async def join(self, timeout: float) -> bool:
        """Wait (bounded) for every running run to end; True when none is left."""
        tasks = [r.task for r in self.active() if r.task is not None]
        if not tasks:
            return True
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        return not pending

    async def close(self) -> None:
        """Cancel what still runs."""
        for run in self.active():
            if run.task is not None:
                await cancel_and_wait(run.task)

    def _forget_old(self) -> None:
        now = time.monotonic()
        old = [k for k, r in self._runs.items() if r.done and now - r.ended_at > KEEP_SECONDS]
        for key in old:
            del self._runs[key]
