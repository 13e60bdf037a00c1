"""Where an approval card goes: to the person who must click, and only to them.

In a DM the card is a reply, as any answer. In a group nobody else should see (or be notified
of) the buttons: the card goes to that person as an ephemeral card ("only you can see",
`ephemeral/v1/send`), or, where those do not work (topic groups and threads, any error), to
their DM; the group gets one short line that an approval is pending, later its outcome. After
the answer the ephemeral card is deleted (it cannot be PATCHed). An approval still open after
`lark.urgent_after_minutes` is buzzed to that person once (`urgent_app`: in the app only).

Lark calls: DM 1 (+1 PATCH on expiry); group 2 (ephemeral or DM card, the line) + 2 after
the answer (delete or expiry PATCH, the line's outcome); +1 for a buzz.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cards.approval_cards import outcome_notice_card, pending_notice_card, resolved_card
from larkbot.context import RequestContext
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.native_api import delete_ephemeral, send_ephemeral, urgent_app
from larkbot.lark.api.render import reply_uuid
from larkbot.lark.approvals.approval_store import ApprovalRow
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.approvals.approval_delivery")
GROUP_TYPES = frozenset({"group", "topic", "topic_group"})  # Lark's and lark-oapi's names
FROM_GROUP = "Asked in a group chat; the group sees only that an approval is pending."


@dataclass(frozen=True)
class Delivered:
    """Where one approval's card and notice went."""

    card_id: str = ""  # a normal message with the buttons (reply in a DM, or the DM fallback)
    ephemeral_id: str = ""  # the ephemeral card in the group
    notice_id: str = ""  # the group's short line

    @property
    def buzz_target(self) -> str:
        """The bot's own message to buzz: the card itself, else the group's line."""
        return self.card_id or self.notice_id


def ephemeral_possible(ctx: RequestContext) -> bool:
    """Ephemeral cards work in normal groups only: not in DMs, topic groups or threads."""
    return ctx.chat_type == "group" and not ctx.thread_id


class CardDelivery:
    """Sends an approval card to the person who must click; settles it afterwards."""

    def __init__(self, client: LarkClient) -> None:
        self.client = client

    async def send(
        self,
        ctx: RequestContext,
        approval_id: str,
        tool: str,
        card: Callable[[str], dict[str, Any]],
    ) -> Delivered:
        """Deliver `card` (built by `card(where_note)`); raises when no card could be shown."""
        if ctx.chat_type not in GROUP_TYPES or not ctx.sender_id:  # a DM (or unknown): reply
            message_id = await self.client.reply(
                ctx.message_id,
                "interactive",
                card(""),
                uuid=reply_uuid(ctx.message_id, f"approval:{approval_id}"),
                reply_in_thread=bool(ctx.thread_id),
                chat_id=ctx.chat_id,
                degrade=False,  # buttons are the point: a text version could never be approved
            )
            return Delivered(card_id=message_id)
        ephemeral_id = card_id = ""
        if ephemeral_possible(ctx):
            try:
                ephemeral_id = await send_ephemeral(
                    self.client, ctx.chat_id, ctx.sender_id, card("")
                )
            except asyncio.CancelledError:
                raise
            except Exception as err:  # e.g. a topic group, or the scope missing: use the DM
                log.info("lark_ephemeral_failed", chat_id=ctx.chat_id, error=str(err)[:200])
        if not ephemeral_id:
            card_id = await self.client.send(
                ctx.sender_id,
                "interactive",
                card(FROM_GROUP),
                receive_id_type="open_id",
                uuid=reply_uuid(ctx.message_id, f"approval-dm:{approval_id}"),
                degrade=False,
            )
        notice_id = await self._notice(
            ctx, approval_id, tool, "ephemeral" if ephemeral_id else "dm"
        )
        return Delivered(card_id, ephemeral_id, notice_id)

    async def _notice(self, ctx: RequestContext, approval_id: str, tool: str, where: str) -> str:
        """The group's line; "" when it could not be posted (the card is out: carry on)."""
        try:
            return await self.client.reply(
                ctx.message_id,
                "interactive",
                pending_notice_card(tool, where),
                uuid=reply_uuid(ctx.message_id, f"approval-note:{approval_id}"),
                reply_in_thread=bool(ctx.thread_id),
                chat_id=ctx.chat_id,
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("lark_approval_notice_failed", chat_id=ctx.chat_id, exc_info=True)
            return ""

    async def settle(self, sent: Delivered, row: ApprovalRow) -> None:
        """After the answer: remove the ephemeral card, show the outcome; best effort."""
        calls = []
        if sent.ephemeral_id:
            calls.append(delete_ephemeral(self.client, sent.ephemeral_id))
        if sent.card_id and row.state == "expired":  # a click already got its resolved card
            card = resolved_card(row.state, row.tool, row.description, row.arguments)
            calls.append(self.client.patch(sent.card_id, card))
        if sent.notice_id:
            calls.append(
                self.client.patch(sent.notice_id, outcome_notice_card(row.state, row.tool))
            )
        for call in calls:
            try:
                await call
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("lark_approval_settle_failed", state=row.state, exc_info=True)

    async def buzz_when_stale(
        self,
        sent: Delivered,
        open_id: str,
        after_seconds: float,
        still_open: Callable[[], Awaitable[bool]],
    ) -> None:
        """Buzz the card (or the group's line) to `open_id` once, if still open by then."""
        if after_seconds <= 0 or not sent.buzz_target or not open_id:
            return
        await asyncio.sleep(after_seconds)
        if not await still_open():
            return
        try:
            invalid = await urgent_app(self.client, sent.buzz_target, [open_id])
        except asyncio.CancelledError:
            raise
        except Exception:  # the card is still there; the buzz was a courtesy
            log.warning("lark_approval_buzz_failed", exc_info=True)
            return
        log.info("lark_approval_buzzed", refused=bool(invalid))
