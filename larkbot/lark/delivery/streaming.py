"""StreamingCardView: a turn longer than ~1 s shows one live card (steps, then the answer).

CardKit first (create a streaming entity, reply with it by card_id, PUT the element's full text
with a rising sequence, then one full update of the card with the final text and streaming
off); when CardKit refuses, an ordinary card updated by PATCH. Updates are throttled: one per
`interval` (the spending plan's, `larkbot/lark/api/spending.py`, else
`lark.stream_updates_per_second`), the first one interval after the card opened. So a ~10 s
answer with a 5 s interval costs 4 calls: create, reply, one update, the final update.
Whatever fails — the card, an update, the final state — the answer still goes out as a plain
reply (PlainReplyView), so it is never lost; a card left behind is closed with a pointer to
that reply when possible.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from cards import lark_cards_of
from cards.lark_budget import markdown_cards
from cards.lark_progress import ELEMENT_ID, final_settings, plain_card, streaming_card
from larkbot.config import LarkConfig
from larkbot.context import RequestContext
from larkbot.events import AgentEvent, AttachmentReady, FinalAnswer, ThinkingDelta
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.render import reply_uuid
from larkbot.lark.api.spending import Plan
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.final_card import FinalCardView
from larkbot.lark.delivery.progress import Progress
from larkbot.lark.delivery.turns import PlainReplyView, TurnView, ViewFactory, sorry
from larkbot.logs import get_logger
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.lark.delivery.streaming")
STREAM_AFTER_SECONDS = 1.0  # shorter turns get a plain reply only
STOP_WAIT_SECONDS = 10.0  # how long finish() waits for an in-flight update
MOVED = "The answer is in the next message."
STREAM_MAX_BYTES = 20_000  # live text kept well under the 30 KB card limit (JSON escaping)


def live_text(content: str) -> str:
    """The live card's text, cut (at a character) once it nears the card limit."""
    raw = content.encode("utf-8")
    if len(raw) <= STREAM_MAX_BYTES:
        return content
    return raw[:STREAM_MAX_BYTES].decode("utf-8", "ignore") + "…"


class StreamingCardView:
    """TurnView with a live progress card and a plain-reply fallback (see the module doc)."""

    def __init__(
        self,
        client: LarkClient,
        message: InboundMessage,
        lark: LarkConfig,
        *,
        delay: float = STREAM_AFTER_SECONDS,
        interval: float = 0.0,
    ) -> None:
        self.client = client
        self.message = message
        self.plain = PlainReplyView(client, message)
        self.interval = max(interval, 1.0 / lark.stream_updates_per_second)
        self.lifetime = lark.turn_timeout_seconds + 60.0
        self.progress = Progress()
        self.card_id = ""  # CardKit entity, when that path works
        self.message_id = ""  # the card's message (either path)
        self.broken = False  # an update failed: stop touching the card, deliver plainly
        self.pushed = ""
        self._sequence = 0
        self._changed = asyncio.Event()
        self._done = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(delay), name="lark-stream")

    # ---- TurnView ----------------------------------------------------------------------------
    async def on_event(self, event: AgentEvent) -> None:
        """Record the event; the updater pushes it at the throttled rate."""
        if isinstance(event, AttachmentReady | ThinkingDelta):  # after the answer, as plain does
            await self.plain.on_event(event)
        if self.progress.apply(event):
            self._changed.set()

    async def finish(self, answer: FinalAnswer) -> None:
        """Final state on the card (answer in full, streaming off), or a plain reply."""
        await self._stop()
        ui = answer.ui or self.progress.ui
        if not self.message_id or self.broken:
            await self._close_quietly()
            await self.plain.finish(FinalAnswer(answer.text, ui))
            return
        final_text = self.progress.render(answer.text, final=True)
        pieces = await asyncio.to_thread(markdown_cards, final_text)  # CPU work off the loop
        contents = [str(c["body"]["elements"][0]["content"]) for c in pieces]
        try:
            await self._final(contents[0], answer.text)
        except Exception:
            log.warning(
                "lark_stream_final_failed", message_id=self.message.message_id, exc_info=True
            )
            self.broken = True
            await self._close_quietly()
            await self.plain.finish(FinalAnswer(answer.text, ui))
            return
        for i, card in enumerate(pieces[1:]):  # the rest of a very long answer
            await self._reply(card, f"more{i}")
        await self.plain.deliver_thinking()
        cards = [card for payload in ui for card in lark_cards_of(payload)]
        for i, card in enumerate(cards):  # each ui card as its own message, after the answer
            await self._reply(card, f"ui{i}")
        await self.plain.deliver_attachments()

    async def fail(self, message: str) -> None:
        """Show the failure on the card when one is open, else as a plain reply."""
        await self._stop()
        text = sorry(message)
        if self.message_id and not self.broken:
            try:
                await self._final(self.progress.render(text, final=True), text)
                await self.plain.deliver_attachments()
                return
            except Exception:
                log.warning("lark_stream_fail_card_failed", exc_info=True)
                self.broken = True
        await self._close_quietly()
        await self.plain.fail(message)

    def abandon(self) -> None:
        """The turn was cancelled (shutdown): stop the updater now; the turn is re-run later."""
        self._done.set()
        self._task.cancel()

    # ---- the updater -------------------------------------------------------------------------
    async def _run(self, delay: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._done.wait(), delay)
            return  # finished quickly: no card at all
        try:
            await self._open()
            async with asyncio.timeout(self.lifetime):  # bounded even if never finished
                await self._pause()  # the card just showed the latest state
                while not self._done.is_set() and not self.broken:
                    await self._wait_change()
                    if self._done.is_set():
                        break
                    self._changed.clear()
                    await self._push()
                    await self._pause()  # throttle: the platform's quota
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("lark_stream_failed", message_id=self.message.message_id, exc_info=True)
            self.broken = True

    async def _pause(self) -> None:
        """Wait one interval, or less when the turn finishes meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._done.wait(), self.interval)

    async def _wait_change(self) -> None:
        changed = asyncio.ensure_future(self._changed.wait())
        done = asyncio.ensure_future(self._done.wait())
        try:
            await asyncio.wait({changed, done}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()
            done.cancel()

    async def _open(self) -> None:
        """Create and send the card: CardKit entity, else an ordinary card (PATCH path)."""
        content = self.progress.render()
        try:
            self.card_id = await self.client.create_card(streaming_card(content))
            entity = {"type": "card", "data": {"card_id": self.card_id}}
            self.message_id = await self._reply(entity, "stream")
        except Exception as err:  # e.g. 99991672: cardkit:card:write not granted
            log.warning(
                "lark_cardkit_unavailable",
                error=f"{type(err).__name__}: {err}",
                hint="answers fall back to a plain card; add the cardkit:card:write scope and "
                "publish a version for live streaming cards",
            )
            self.card_id = ""
            # a live card must stay a card (it is PATCHed): no plainer fallback for it
            self.message_id = await self._reply(plain_card(content), "stream2", degrade=False)
        self.pushed = content

    async def _push(self) -> None:
        content = live_text(self.progress.render())
        if content == self.pushed:
            return
        if self.card_id:
            await self.client.stream_text(self.card_id, ELEMENT_ID, content, self._next())
        else:
            await self.client.patch(self.message_id, plain_card(content))
        self.pushed = content

    async def _final(self, content: str, answer: str) -> None:
        """The card's last state in one call: the final card (CardKit) or a final PATCH.

        New text: one full update whose card has streaming off (rather than a content update
        plus a settings call); text already shown: only the settings that end streaming.
        """
        if self.card_id:
            if content != self.pushed:
                await self.client.update_card(
                    self.card_id, plain_card(content, answer), self._next()
                )
            else:
                await self.client.update_card_settings(
                    self.card_id, final_settings(answer), self._next()
                )
        else:
            await self.client.patch(self.message_id, plain_card(content, answer))
        self.pushed = content

    async def _close_quietly(self) -> None:
        """Best effort: a card left open points to the plain reply and stops 'generating'.

        Its whole content is replaced, not only its settings: the answer then shows once, in
        the plain reply, rather than also half-streamed on the card above it.
        """
        if not self.message_id:
            return
        with contextlib.suppress(Exception):
            if self.card_id:
                try:
                    card = plain_card(MOVED, MOVED)
                    await self.client.update_card(self.card_id, card, self._next())
                except Exception:  # at least stop "generating"
                    await self.client.update_card_settings(
                        self.card_id, final_settings(MOVED), self._next()
                    )
            else:
                await self.client.patch(self.message_id, plain_card(MOVED, MOVED))

    async def _stop(self) -> None:
        """End the updater: let an in-flight call finish (bounded), then cancel."""
        self._done.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), STOP_WAIT_SECONDS)
        except TimeoutError:
            await cancel_and_wait(self._task)
            self.broken = self.broken or bool(self.message_id)

    async def _reply(self, content: dict[str, Any], part: str, degrade: bool = True) -> str:
        return await self.client.reply(
            self.message.message_id,
            "interactive",
            content,
            uuid=reply_uuid(self.message.message_id, part),
            reply_in_thread=bool(self.message.thread_id),
            chat_id=self.message.chat_id,
            degrade=degrade,
        )

    def _next(self) -> int:
        self._sequence += 1
        return self._sequence


def make_view_factory(
    client: LarkClient, lark: LarkConfig, plan: Callable[[], Plan] | None = None
) -> ViewFactory:
    """The App's view factory: what the spending `plan` allows, within `lark.streaming`.

    "stream": a live card (at the plan's interval); "card": the final answer as one card;
    "plain": plain replies. Without a plan (no budget known): live cards at the configured rate.
    """

    def factory(msg: InboundMessage, ctx: RequestContext) -> TurnView:
        now = plan() if plan is not None else Plan("stream")
        if not lark.streaming or now.mode == "plain":
            return PlainReplyView(client, msg)
        if now.mode == "card":
            return FinalCardView(client, msg)
        return StreamingCardView(client, msg, lark, interval=now.interval)

    return factory
