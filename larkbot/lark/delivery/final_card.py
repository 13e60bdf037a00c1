"""FinalCardView: no live card, the final answer as one card (the spending plan's "card" mode).

What a streamed turn's card ends with — the steps taken, then the answer — in a single reply,
so a turn costs one call however long it runs. A turn without tool steps is answered exactly
as PlainReplyView does (markdown as a card, plain text as text).
"""

from __future__ import annotations

import asyncio

from cards.lark_budget import markdown_cards
from larkbot.events import AgentEvent, FinalAnswer
from larkbot.lark.api.client import LarkClient
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.progress import Progress
from larkbot.lark.delivery.turns import PlainReplyView, lark_cards


class FinalCardView(PlainReplyView):
    """PlainReplyView that also records the turn's steps and shows them above the answer."""

    def __init__(self, client: LarkClient, message: InboundMessage) -> None:
        super().__init__(client, message)
        self.progress = Progress()

    async def on_event(self, event: AgentEvent) -> None:
        """Collect as PlainReplyView does, and the steps."""
        await super().on_event(event)
        self.progress.apply(event)

    async def finish(self, answer: FinalAnswer) -> None:
        """Steps and answer as one card (split only past Lark's size), then the rest."""
        if not self.progress.steps:
            await super().finish(answer)
            return
        final_text = self.progress.render(answer.text, final=True)
        pieces = await asyncio.to_thread(markdown_cards, final_text)  # CPU work off the loop
        for i, card in enumerate(pieces):
            await self._reply("interactive", card, f"a{i}")
        await self.deliver_thinking()
        for i, card in enumerate(lark_cards(answer.ui or self._ui)):
            await self._reply("interactive", card, f"ui{i}")
        await self.deliver_attachments()
