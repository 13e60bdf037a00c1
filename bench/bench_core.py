"""Agent-core figures: loop overhead per tool round trip, and tool concurrency in one turn.

The model is an in-process stub provider that answers instantly (no HTTP), so the figures are
the loop's own cost: prompt building, tool checks, executor, events and SQLite persistence.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from larkbot.agent import Agent
from larkbot.config import parse_settings
from larkbot.consent import ConsentAnswer, ConsentRequest
from larkbot.context import RequestContext
from larkbot.policy import Policy
from larkbot.providers.base import Completion, StreamEvent, TextChunk, ToolCall
from larkbot.storage.db import Database
from larkbot.storage.sessions import SessionStore
from tools.base import BaseTool
from tools.registry import ToolRegistry


class Noop(BaseTool):
    """Returns at once."""

    name = "noop"
    description = "Does nothing."

    async def run(self, **kw: Any) -> str:
        return "ok"


class Sleep(BaseTool):
    """Sleeps `seconds`."""

    name = "sleep"
    description = "Sleeps."
    parameters = {"type": "object", "properties": {"seconds": {"type": "number"}}}  # noqa: RUF012

    async def run(self, **kw: Any) -> str:
        await asyncio.sleep(kw["seconds"])
        return "slept"


class StubModel:
    """Instant model: `rounds` replies of `calls`, then a text answer."""

    def __init__(self, rounds: int, calls: list[ToolCall]) -> None:
        self.rounds, self.calls, self.step = rounds, calls, 0

    async def _reply(self) -> Completion:
        self.step += 1
        if self.step <= self.rounds:
            calls = [ToolCall(f"{c.id}-{self.step}", c.name, c.arguments) for c in self.calls]
            return Completion("", calls, "tool_calls")
        self.step = 0
        return Completion("done", [], "stop")

    async def stream(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
    ) -> AsyncIterator[StreamEvent]:
        done = await self._reply()
        if done.text:
            yield TextChunk(done.text)
        for call in done.tool_calls:
            yield call
        yield done

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
    ) -> Completion:
        return await self._reply()


class Allow:
    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        return ConsentAnswer(True)


async def _agent(tmp: Path, model: StubModel, steps: int) -> tuple[Agent, Database]:
    settings = parse_settings(
        {"storage": {"url": f"sqlite:///{tmp}/bench.db"}, "agent": {"max_steps": steps + 1}}
    )
    db = Database(settings.storage.url)
    store = SessionStore(db)
    await store.init()
    registry = ToolRegistry()
    registry.register(Noop())
    registry.register(Sleep())
    return Agent(model, registry, store, Allow(), Policy(dict), settings), db


async def _turn(agent: Agent, session: str) -> None:
    ctx = RequestContext.local_owner(session)
    async for _ in agent.stream_chat(session, "go", ctx):
        pass


async def overhead(tmp: Path) -> None:
    """(a) loop cost per tool round trip vs a bare model+tool baseline."""
    rounds, turns = 10, 30
    model = StubModel(rounds, [ToolCall("c", "noop", {})])
    agent, db = await _agent(tmp, model, rounds)
    await _turn(agent, "warmup")
    started = time.perf_counter()
    for i in range(turns):
        await _turn(agent, f"s{i % 3}")  # sessions with growing (trimmed) history
    loop_s = (time.perf_counter() - started) / (turns * rounds)
    await db.close()

    # baseline: the same model replies and tool runs, awaited directly, no loop around them
    bare = StubModel(rounds, [ToolCall("c", "noop", {})])
    tool = Noop()
    started = time.perf_counter()
    for _ in range(turns):
        for _ in range(rounds + 1):
            async for ev in bare.stream([]):
                if isinstance(ev, ToolCall):
                    await tool.run(**ev.arguments)
    base_s = (time.perf_counter() - started) / (turns * rounds)
    extra_ms = (loop_s - base_s) * 1000
    print(f"(a) loop overhead per tool round trip: {extra_ms:.2f} ms (target < 2 ms)")
    print(
        f"    loop {loop_s * 1e3:.3f} ms vs bare model+tool {base_s * 1e3:.4f} ms per round trip "
        f"(baseline, same run) = {loop_s / base_s:.0f}x the bare cost"
    )
    print("    (in-process stub model, SQLite persistence included)")


async def concurrency(tmp: Path) -> None:
    """(b) 10 tools of 0.5 s in one turn vs run one after another."""
    calls = [ToolCall(f"c{i}", "sleep", {"seconds": 0.5}) for i in range(10)]
    agent, db = await _agent(tmp, StubModel(1, calls), 2)
    started = time.perf_counter()
    await _turn(agent, "conc")
    together = time.perf_counter() - started
    await db.close()
    tool = Sleep()
    started = time.perf_counter()
    for call in calls:
        await tool.run(**call.arguments)
    sequential = time.perf_counter() - started
    print(
        f"(b) 10 × 0.5 s tools: one turn {together:.2f} s vs sequential {sequential:.2f} s "
        f"= {sequential / together:.1f}x faster (target >= 8x)"
    )


def main() -> None:
    """Print both figures."""
    from larkbot.logs import configure_logging

    configure_logging("warning", "console")
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(overhead(Path(tmp)))
        asyncio.run(concurrency(Path(tmp)))


if __name__ == "__main__":
    main()
