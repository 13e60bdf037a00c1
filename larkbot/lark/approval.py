"""Approval cards in Lark: an owner's `consent_always` call waits for an Approve / Deny click.

`LarkApprovals` is Lark's ConsentProvider: it presents the policy's Ask as a card replying in
the turn's thread (naming any untrusted content that raised the bar) and waits
(lark.approval_timeout_seconds, then refused). `handle_card` answers the verified
`card.action.trigger` at once (well within Lark's 3 s): only an owner's click counts, a late
click says "expired", repeats are harmless.
Approvals live in this process: with several replicas the click must reach the one waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from cards.approval_cards import approval_card, resolved_card
from larkbot.consent import ConsentAnswer, ConsentRequest
from larkbot.lark.client import LarkClient
from larkbot.lark.render import reply_uuid
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.approval")
KEEP_RESOLVED = 512  # answered approvals remembered, so a repeat click gets a sensible reply


@dataclass
class Approval:
    """One question: its card's content, deadline, state and the waiting turn's future."""

    approval_id: str
    tool: str
    description: str
    arguments: dict[str, Any]
    deadline: float
    future: asyncio.Future[bool]
    state: str = "pending"  # approved | denied | expired
    by: str = ""
    message_id: str = ""
    card: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        """The card for the current (final) state."""
        return resolved_card(self.state, self.tool, self.description, self.arguments, self.by)


def _toast(kind: str, text: str) -> dict[str, Any]:
    return {"toast": {"type": kind, "content": text}}


class LarkApprovals:
    """ConsentProvider (presents an Ask as a card) plus the card callback handler."""

    def __init__(
        self,
        client: LarkClient,
        is_owner: Callable[[str], Awaitable[bool]],
        timeout: Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.is_owner = is_owner
        self.timeout = timeout
        self.clock = clock
        self.approvals: OrderedDict[str, Approval] = OrderedDict()

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        """Send the card, wait for the owner's click or the timeout."""
        ctx = request.context
        if not ctx.message_id:
            return ConsentAnswer(False, "approval cannot be asked outside a chat turn")
        timeout = self.timeout()
        approval = Approval(
            secrets.token_urlsafe(12),
            request.tool.name,
            request.description,
            dict(request.arguments),
            self.clock() + timeout,
            asyncio.get_running_loop().create_future(),
        )
        card = approval_card(
            approval.approval_id,
            approval.tool,
            approval.description,
            approval.arguments,
            timeout,
            request.sources,
        )
        self._remember(approval)  # before the card is out: the click may come back at once
        try:
            approval.message_id = await self.client.reply(
                ctx.message_id,
                "interactive",
                card,
                uuid=reply_uuid(ctx.message_id, f"approval:{approval.approval_id}"),
                reply_in_thread=bool(ctx.thread_id),
                chat_id=ctx.chat_id,
            )
        except asyncio.CancelledError:
            self._give_up(approval)
            raise
        except Exception:
            self._give_up(approval)
            log.warning("lark_approval_card_failed", tool=approval.tool, exc_info=True)
            return ConsentAnswer(False, "the approval card could not be shown; not run")
        log.info("lark_approval_asked", tool=approval.tool, approval=approval.approval_id)
        try:
            async with asyncio.timeout(timeout):  # not wait_for: 3.11's can swallow a cancel
                allowed = await asyncio.shield(approval.future)
        except TimeoutError:
            await self._expire(approval)
            allowed = False
        except asyncio.CancelledError:
            # The turn is gone: a later click must not count, and the entry must not stay
            # pending (pending entries are never evicted).
            self._give_up(approval)
            raise
        if approval.state == "expired":
            return ConsentAnswer(
                False, f"the owner did not approve within {timeout:g} s, so it was not run"
            )
        if allowed:
            return ConsentAnswer(True, "approved by the owner")
        return ConsentAnswer(False, "the owner denied it; do not retry unless asked")

    async def _expire(self, approval: Approval) -> None:
        if approval.state == "pending":
            approval.state = "expired"
            if not approval.future.done():
                approval.future.set_result(False)
            with contextlib.suppress(Exception):  # the card says so; best effort
                await self.client.patch(approval.message_id, approval.resolved())

    @staticmethod
    def _give_up(approval: Approval) -> None:
        """Mark a pending approval expired without touching its card (no awaiting here)."""
        if approval.state == "pending":
            approval.state = "expired"
            if not approval.future.done():
                approval.future.set_result(False)

    def _remember(self, approval: Approval) -> None:
        self.approvals[approval.approval_id] = approval
        if len(self.approvals) <= KEEP_RESOLVED:
            return
        for key in [k for k, a in self.approvals.items() if a.state != "pending"]:
            if len(self.approvals) <= KEEP_RESOLVED:
                break
            del self.approvals[key]  # oldest answered first; pending ones are still awaited

    async def handle_card(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Answer a card click at once: toast, and the resolved card when the state changed."""
        event = envelope.get("event") or {}
        action = event.get("action") if isinstance(event, dict) else None
        value = action.get("value") if isinstance(action, dict) else None
        if not isinstance(value, dict) or "approval" not in value:
            return {}  # not one of ours
        operator = event.get("operator")
        open_id = str(operator.get("open_id", "")) if isinstance(operator, dict) else ""
        approval = self.approvals.get(str(value.get("approval")))
        if approval is None:
            return _toast("info", "This approval has expired.")
        if not await self.is_owner(open_id):
            log.info("lark_approval_not_owner", approval=approval.approval_id)
            return _toast("error", "Only the bot's owner can approve this.")
        if approval.state == "pending" and self.clock() > approval.deadline:
            await self._expire(approval)
        if approval.state == "expired":
            return {**_toast("info", "This approval has expired."), **self._card(approval)}
        if approval.state != "pending":
            return {**_toast("info", f"Already {approval.state}."), **self._card(approval)}
        allowed = value.get("decision") == "approve"
        approval.state, approval.by = ("approved" if allowed else "denied"), open_id
        approval.future.set_result(allowed)
        log.info("lark_approval_answered", approval=approval.approval_id, state=approval.state)
        kind = "success" if allowed else "warning"
        return {**_toast(kind, f"{approval.state.capitalize()}."), **self._card(approval)}

    @staticmethod
    def _card(approval: Approval) -> dict[str, Any]:
        return {"card": {"type": "raw", "data": approval.resolved()}}

    def cancel_all(self) -> None:
        """Shutdown: every waiting approval is refused (its turn is being drained)."""
        for approval in self.approvals.values():
            self._give_up(approval)
