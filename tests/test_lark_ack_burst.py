"""Acknowledgements first, through the real webhook: turn steps due while events are being acked
wait for those acks (at most `TURN_START_DEFER` each), and a lone event's turn waits for nothing.

The burst is made provable rather than fast: an event whose body is held open (headers and all
but its last byte sent, the server reading it under `server.body_read_seconds`) keeps the
server mid-acknowledgement until the test releases it, so no 5 ms gap can end the burst early.
The fake model notes, for each request, when it came and how many acks were then in progress.
Every check is an ordering or a count, or a lower bound that load can only make safer.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yarl import URL

from larkbot.lark.ingress import TURN_START_DEFER
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import Served, message_event, seal, settings_for

WAIT = 15.0  # bound on every wait; generous for a loaded 2-core machine
BURST = 8
MARK = re.compile(r"burst-(\d+)")


@dataclass(frozen=True)
class Asked:
    """One model request: for which message, when (monotonic s), acks in progress then."""

    n: int
    at: float
    acking: int


def recording(llm: FakeLLM, s: Served) -> list[Asked]:
    """Make the fake model note every request; returns the list it appends to."""
    asked: list[Asked] = []

    def respond(body: dict[str, Any]) -> Reply:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        found = MARK.search(json.dumps(users[-1:]))
        n = int(found.group(1)) if found else -1
        asked.append(Asked(n, time.monotonic(), s.app.ingress.acking_now))
        return Reply(text=f"answer {n}")

    llm.responder = respond
    return asked


def event(n: int) -> dict[str, Any]:
    """Message `n` in a chat of its own (so no turn waits behind another in its session)."""
    return message_event(f"burst-{n}", chat_id=f"oc_burst_{n}", message_id=f"om_burst_{n}")


class HeldEvent:
    """An event POSTed over a raw connection with its body's last byte held back."""

    def __init__(self, s: Served, n: int) -> None:
        self.url = URL(s.url("/lark/events"))
        self.body, self.headers = seal(event(n))
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def open(self) -> None:
        """Send the headers and all but the last byte: the server is now reading the body."""
        reader, writer = await asyncio.open_connection(self.url.host, self.url.port)
        head = [f"POST {self.url.path} HTTP/1.1", f"Host: {self.url.host}"]
        head += [f"{k}: {v}" for k, v in self.headers.items()]
        head += [f"Content-Length: {len(self.body)}", "Connection: close", "", ""]
        writer.write("\r\n".join(head).encode() + self.body[:-1])
        await writer.drain()
        self._conn = reader, writer

    async def release(self) -> bytes:
        """Send the last byte; the response's status line."""
        assert self._conn is not None
        reader, writer = self._conn
        writer.write(self.body[-1:])
        await writer.drain()
        try:
            async with asyncio.timeout(WAIT):
                return await reader.readline()
        finally:
            writer.close()


async def until(check: Callable[[], bool], what: str) -> None:
    """Poll a condition (bounded readiness wait)."""
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.005)


async def answered(lark: FakeLark, count: int) -> None:
    """Wait until `count` replies were posted."""
    await lark.wait_for(lambda: len(lark.sent) >= count, timeout=WAIT)


def served(home: Path, lark: FakeLark, llm: FakeLLM) -> Served:
    """The App on the real webhook; body reads may take long (the held event is one)."""
    settings = settings_for(home, lark.domain, llm.base_url, server={"body_read_seconds": 60})
    return Served(settings)


async def post_all(s: Served, ns: range) -> None:
    """POST events `ns` at once, each sealed like Lark; all must be acknowledged."""
    statuses = await asyncio.gather(*(s.post_event(event(n)) for n in ns))
    assert [status for status, _ in statuses] == [200] * len(ns)


async def test_a_lone_events_turn_starts_after_its_acknowledgement(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with served(home, fake_lark, fake_llm) as s:
        asked = recording(fake_llm, s)
        for n in range(3):  # one after another, each answered before the next is sent
            assert (await s.post_event(event(n)))[0] == 200
            await answered(fake_lark, n + 1)
        # each turn waited out the 5 ms after its own ack (which tells a stream of events a
        # millisecond apart from a lone one) and started with no ack in progress
        assert [(a.n, a.acking) for a in asked] == [(0, 0), (1, 0), (2, 0)]


async def test_turns_due_during_a_burst_start_after_its_acknowledgements(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with served(home, fake_lark, fake_llm) as s:
        asked = recording(fake_llm, s)
        held = HeldEvent(s, BURST)
        await held.open()
        await until(lambda: s.app.ingress.acking_now == 1, "the held event is being read")
        burst_began = time.monotonic()
        await post_all(s, range(BURST))
        # every turn of the burst came due, and had to wait, while the held ack was open
        await until(lambda: s.app.ingress.deferred_steps >= BURST, "each burst turn waits")
        released = time.monotonic()
        assert (await held.release()).startswith(b"HTTP/1.1 200")
        await answered(fake_lark, BURST + 1)
        early = [a for a in asked if a.at < released]
        # A turn started before the burst's last ack only when its wait ran out, never sooner
        assert all(a.at >= burst_began + TURN_START_DEFER and a.acking for a in early)
        assert Counter(m["reply_to"] for m in fake_lark.sent) == Counter(
            f"om_burst_{n}" for n in range(BURST + 1)
        )  # one answer each


async def test_acknowledgements_that_never_end_delay_each_turn_step_by_max_defer_at_most(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with served(home, fake_lark, fake_llm) as s:
        asked = recording(fake_llm, s)
        held = HeldEvent(s, 1)
        await held.open()
        await until(lambda: s.app.ingress.acking_now == 1, "the held event is being read")
        due = time.monotonic()
        await post_all(s, range(1))
        await until(lambda: bool(asked), "the turn starts though the held ack is still open")
        assert asked[0].n == 0 and asked[0].acking == 1  # asked mid-acknowledgement...
        # ...but only once the waits of its start and of its first model round ran out
        assert asked[0].at - due >= 2 * TURN_START_DEFER
        assert s.app.ingress.deferred_steps == 2
        assert (await held.release()).startswith(b"HTTP/1.1 200")
        await answered(fake_lark, 2)
        assert [a.n for a in asked] == [0, 1]


async def test_a_bursts_new_sessions_wait_as_one_task_and_drain_releases_their_claims(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with served(home, fake_lark, fake_llm) as s:
        held = HeldEvent(s, BURST)
        await held.open()
        await until(lambda: s.app.ingress.acking_now == 1, "the held event is being read")
        await post_all(s, range(BURST))  # eight new chats: eight new sessions
        names = [t.get_name() for t in asyncio.all_tasks()]
        # no worker per session while acks are in flight: one task waits for all of them
        assert names.count("start-when-calm") == 1
        assert not [n for n in names if n.startswith("lark-session:")]
        assert s.app.dispatcher.queued == BURST
        assert await s.app.drain(0.01) is False  # that wait is cancelled: nothing ran here
        assert s.app.dispatcher.queued == 0 and fake_llm.requests == []
        # each claim was released, so recovery can take it at once rather than after its lease
        retaken = await s.app.journal.reclaim_expired(limit=BURST + 1)
        assert sorted(json.loads(p)["message_id"] for p in retaken) == sorted(
            f"om_burst_{n}" for n in range(BURST)
        )
        assert (await held.release()).startswith(b"HTTP/1.1 ")
    assert fake_lark.sent == []
