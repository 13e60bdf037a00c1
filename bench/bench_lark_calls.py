"""Lark API calls per answer, against FakeLark: a ~10 s streamed answer and a plain one.

The same ~10 s turn (a tool step at 0.5 s, done at 2 s, then the answer streamed in 32 pieces
until 10 s) is shown three ways at once, each on its own FakeLark, in real time:

- baseline: the previous flow (main before the budget), replayed call for call — create the
  CardKit entity, reply with it, one content PUT per throttle tick with a change (2/s), then a
  last content PUT and a settings PATCH;
- default budget: StreamingCardView as `serve` builds it with `lark.monthly_call_budget` at its
  default on the 1st of the month (the spending plan's interval);
- no budget (`monthly_call_budget: 0`): StreamingCardView at `stream_updates_per_second: 2`.

Then a plain answer (PlainReplyView). The tenant token is fetched before counting (it is
cached across restarts and replicas); every other HTTP request FakeLark saw is counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime

import httpx

from cards.lark_progress import ELEMENT_ID, final_settings, streaming_card
from larkbot.config import LarkConfig
from larkbot.events import AgentEvent, FinalAnswer, TextDelta, ToolFinished, ToolStarted
from larkbot.lark.api.budget import QUOTA_TZ
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.spending import plan_for
from larkbot.lark.api.transport import TOKEN_PATH
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.progress import Progress
from larkbot.lark.delivery.streaming import StreamingCardView
from larkbot.lark.delivery.turns import PlainReplyView
from larkbot.logs import configure_logging
from tests.fakes.lark_server import FakeLark

MSG = InboundMessage("om_user_1", "oc_chat", "p2p", "ou_owner", "compare phones")
ANSWER = " ".join(f"word{i}" for i in range(32))
TARGET_STREAMED = 4
Sink = Callable[[AgentEvent], Awaitable[None]]


async def ten_second_turn(on_event: Sink) -> FinalAnswer:
    """The turn's events in real time; returns its final answer."""
    await asyncio.sleep(0.5)
    await on_event(ToolStarted("c1", "web_search", {"query": "phones under 4000"}))
    await asyncio.sleep(1.5)
    await on_event(ToolFinished("c1", "web_search", "results", False, 1.5))
    for i in range(32):
        await asyncio.sleep(0.25)
        await on_event(TextDelta(f"word{i} "))
    return FinalAnswer(ANSWER)


class PreviousFlow:
    """The flow before the budget (streaming.py on main then), reduced to its calls."""

    def __init__(self, client: LarkClient) -> None:
        self.client, self.progress, self.seq = client, Progress(), 0
        self.changed, self.done = asyncio.Event(), asyncio.Event()
        self.task = asyncio.create_task(self._run())
        self.card_id, self.pushed = "", ""

    async def on_event(self, event: AgentEvent) -> None:
        """Record; the updater pushes at 2/s."""
        if self.progress.apply(event):
            self.changed.set()

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    async def _run(self) -> None:
        await asyncio.sleep(1.0)  # STREAM_AFTER_SECONDS
        self.pushed = self.progress.render()
        self.card_id = await self.client.create_card(streaming_card(self.pushed))
        entity = {"type": "card", "data": {"card_id": self.card_id}}
        await self.client.reply(MSG.message_id, "interactive", entity)
        while not self.done.is_set():
            await self.changed.wait()
            self.changed.clear()
            text = self.progress.render()
            if text != self.pushed:
                await self.client.stream_text(self.card_id, ELEMENT_ID, text, self._next())
                self.pushed = text
            await asyncio.sleep(0.5)  # 1 / stream_updates_per_second

    async def finish(self, answer: FinalAnswer) -> None:
        """Last content PUT when changed, then the settings PATCH ending streaming."""
        self.done.set()
        self.changed.set()
        await self.task
        final = self.progress.render(answer.text, final=True)
        if final != self.pushed:
            await self.client.stream_text(self.card_id, ELEMENT_ID, final, self._next())
        await self.client.update_card_settings(
            self.card_id, final_settings(answer.text), self._next()
        )


def calls(fake: FakeLark) -> int:
    """HTTP requests FakeLark saw, but the token fetch."""
    return sum(1 for r in fake.requests if r.path != TOKEN_PATH)


async def _flow(make: Callable[[LarkClient], object]) -> int:
    async with FakeLark() as fake, httpx.AsyncClient() as http:
        client = LarkClient(http, fake.domain, fake.app_id, fake.app_secret)
        await client.token()
        view = make(client)
        answer = await ten_second_turn(view.on_event)  # type: ignore[attr-defined]
        await view.finish(answer)  # type: ignore[attr-defined]
        return calls(fake)


async def _plain() -> int:
    async with FakeLark() as fake, httpx.AsyncClient() as http:
        client = LarkClient(http, fake.domain, fake.app_id, fake.app_secret)
        await client.token()
        await PlainReplyView(client, MSG).finish(FinalAnswer("A short answer."))
        return calls(fake)


async def _bench() -> tuple[int, int, int, int]:
    first_day = datetime(2026, 12, 1, 0, 30, tzinfo=QUOTA_TZ).timestamp()
    plan = plan_for(0, LarkConfig().monthly_call_budget, first_day)
    budgeted = LarkConfig()
    unbudgeted = LarkConfig(monthly_call_budget=0, stream_updates_per_second=2)
    baseline, ours, unlimited = await asyncio.gather(
        _flow(PreviousFlow),
        _flow(lambda c: StreamingCardView(c, MSG, budgeted, interval=plan.interval)),
        _flow(lambda c: StreamingCardView(c, MSG, unbudgeted)),
    )
    return baseline, ours, unlimited, await _plain()


def main() -> None:
    """Print the calls per answer, each flow against the previous one."""
    configure_logging("error", "json")
    baseline, ours, unlimited, plain = asyncio.run(_bench())
    budget = LarkConfig().monthly_call_budget
    print("Lark API calls for one ~10 s streamed answer (token cached, not counted):")
    print(f"  previous flow (baseline)              {baseline:3d}")
    print(f"  default budget ({budget:,}/month)      {ours:3d}   {ours / baseline:.2f}x baseline")
    print(f"  no budget (0), 2 updates/s            {unlimited:3d}   {unlimited / baseline:.2f}x")
    print(f"Lark API calls for a plain answer:     {plain:3d}")
    print(f"  streamed answers per month at the default budget: {budget // max(ours, 1):,}")
    assert ours <= TARGET_STREAMED, (
        f"a streamed answer cost {ours} calls (target {TARGET_STREAMED})"
    )
    assert plain == 1, f"a plain answer cost {plain} calls"


if __name__ == "__main__":
    main()
