"""Approval cards in Lark: an owner's `consent_always` call waits for an Approve / Deny click.

`LarkApprovals` is Lark's ConsentProvider: it presents the policy's Ask as a card replying in
the turn's thread (naming any untrusted content that raised the bar) and waits
(lark.approval_timeout_seconds, then refused). `handle_card` answers the verified
`card.action.trigger` at once (well within Lark's 3 s): only an owner's click counts (for a
workspace write acting as someone, only that person's: `Ask.confirm_by`), a late
click says "expired", a second click says what the first decided.
The request is a row in the database (`approval_store.py`), so the click may reach any
replica: the first answer wins there and wakes the replica whose turn waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from cards.approval_cards import approval_card, confirm_card, resolved_card
from larkbot.consent import ConsentAnswer, ConsentRequest
from larkbot.lark.approval_store import ApprovalRow, ApprovalStore, State
from larkbot.lark.client import LarkClient
from larkbot.lark.render import reply_uuid
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.approval")
# The id of a confirmation only the asker may give (workspace writes acting as them).
ASKER_PREFIX = "ask-"


def _toast(kind: str, text: str) -> dict[str, Any]:
    return {"toast": {"type": kind, "content": text}}


def _card(row: ApprovalRow) -> dict[str, Any]:
    """The card for the row's current (final) state."""
    data = resolved_card(row.state, row.tool, row.description, row.arguments, row.answered_by)
    return {"card": {"type": "raw", "data": data}}


class LarkApprovals:
    """ConsentProvider (presents an Ask as a card) plus the card callback handler."""

    def __init__(
        self,
        client: LarkClient,
        store: ApprovalStore,
        is_owner: Callable[[str], Awaitable[bool]],
        timeout: Callable[[], float],
    ) -> None:
        self.client = client
        self.store = store
        self.is_owner = is_owner
        self.timeout = timeout

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        """Send the card, wait for the owner's click (on any replica) or the timeout."""
        ctx = request.context
        if not ctx.message_id:
            return ConsentAnswer(False, "approval cannot be asked outside a chat turn")
        timeout = self.timeout()
        approval_id = secrets.token_urlsafe(12)
        if request.confirm_by:  # stored in the row's id: any replica knows whose click counts
            approval_id = ASKER_PREFIX + approval_id
        # Stored before the card is out: the click may come back at once, to any replica.
        await self.store.open(
            approval_id,
            request.tool.name,
            request.description,
            dict(request.arguments),
            request.confirm_by or ctx.sender_id,
            timeout,
        )
        try:
            return await self._ask(approval_id, request, timeout)
        except asyncio.CancelledError:  # the turn is gone: a later click must not count
            with contextlib.suppress(Exception):
                await asyncio.shield(self.store.close_as_expired(approval_id))
            raise

    async def _ask(
        self, approval_id: str, request: ConsentRequest, timeout: float
    ) -> ConsentAnswer:
        ctx, tool = request.context, request.tool.name
        if request.confirm_by:
            card = confirm_card(
                approval_id,
                tool,
                request.description,
                dict(request.arguments),
                timeout,
                request.confirm_by,
                request.sources,
            )
        else:
            card = approval_card(
                approval_id,
                tool,
                request.description,
                dict(request.arguments),
                timeout,
                request.sources,
            )
        who = "the person who asked" if request.confirm_by else "the owner"
        try:
            message_id = await self.client.reply(
                ctx.message_id,
                "interactive",
                card,
                uuid=reply_uuid(ctx.message_id, f"approval:{approval_id}"),
                reply_in_thread=bool(ctx.thread_id),
                chat_id=ctx.chat_id,
                degrade=False,  # buttons are the point: a text version could never be approved
            )
        except Exception:
            await self.store.close_as_expired(approval_id)
            log.warning("lark_approval_card_failed", tool=tool, exc_info=True)
            return ConsentAnswer(False, "the approval card could not be shown; not run")
        await self.store.sent(approval_id, message_id)
        log.info("lark_approval_asked", tool=tool, approval=approval_id)
        row = await self.store.wait(approval_id)
        if row.state == "approved":
            return ConsentAnswer(True, f"approved by {who}")
        if row.state == "denied":
            return ConsentAnswer(False, f"{who} denied it; do not retry unless asked")
        with contextlib.suppress(Exception):  # the card says so; best effort
            await self.client.patch(message_id, _card(row)["card"]["data"])
        return ConsentAnswer(
            False, f"{who} did not approve within {timeout:g} s, so it was not run"
        )

    async def handle_card(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Answer a card click at once: toast, and the resolved card when the state is final."""
        event = envelope.get("event") or {}
        action = event.get("action") if isinstance(event, dict) else None
        value = action.get("value") if isinstance(action, dict) else None
        if not isinstance(value, dict) or "approval" not in value:
            return {}  # not one of ours
        operator = event.get("operator")
        open_id = str(operator.get("open_id", "")) if isinstance(operator, dict) else ""
        approval_id = str(value.get("approval"))[:64]
        row = await self.store.get(approval_id)
        if row is None:
            return _toast("info", "This approval has expired.")
        if approval_id.startswith(ASKER_PREFIX):  # a write acting as the asker: theirs alone
            if not open_id or open_id != row.asker:
                log.info("lark_confirm_not_asker", approval=approval_id)
                return _toast("error", "Only the person who asked can confirm this.")
        elif not await self.is_owner(open_id):  # the same owner check on every replica
            log.info("lark_approval_not_owner", approval=approval_id)
            return _toast("error", "Only the bot's owner can approve this.")
        if row.state == "pending":
            state: State = "approved" if value.get("decision") == "approve" else "denied"
            if await self.store.answer(approval_id, state, open_id):  # refused when overdue
                log.info("lark_approval_answered", approval=approval_id, state=state)
                row = await self.store.get(approval_id) or row
                kind = "success" if state == "approved" else "warning"
                return {**_toast(kind, f"{state.capitalize()}."), **_card(row)}
            # Too late, or another click (maybe on another replica) won just now.
            row = await self.store.close_as_expired(approval_id) or row
        if row.state == "expired":
            return {**_toast("info", "This approval has expired."), **_card(row)}
        return {**_toast("info", f"Already {row.state}."), **_card(row)}

    def cancel_all(self) -> None:
        """Shutdown: every approval waiting here is refused (its turn is being drained)."""
        self.store.abandon_all()
