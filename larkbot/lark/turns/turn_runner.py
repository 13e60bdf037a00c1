"""One Lark turn: its request context, the command or agent run, and the answer's delivery."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from larkbot.config import LarkConfig
from larkbot.context import RequestContext
from larkbot.events import FinalAnswer
from larkbot.lark.api.errors import CredentialsRefused, LarkAPIError
from larkbot.lark.api.transport import refused
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.claims.journal import InboundJournal
from larkbot.lark.delivery.turns import TurnView, ViewFactory
from larkbot.lark.owners import Owners
from larkbot.lark.turns.answer import Agent, answer_command, answer_message
from larkbot.lark.turns.commands import Commands, parse_command
from larkbot.lark.turns.turn_input import TurnInputs
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.turn")
DONE_ATTEMPTS = 6  # journal.done tries before the turn is left to re-run
FORGIVEN_KEPT = 10_000  # message ids remembered as forgiven (then the memory starts afresh)
FORGIVE_AT_MOST = 3  # takeovers forgiven per message by one replica (see `forgive`)


class TurnRunner:
    """Runs one claimed message to a delivered answer; the Dispatcher decides when."""

    def __init__(
        self,
        agent: Agent,
        journal: InboundJournal,
        owners: Owners,
        commands: Commands,
        view_factory: ViewFactory,
        lark: Callable[[], LarkConfig],
        inputs: TurnInputs | None,  # names, media, quotes; None: the text alone
    ) -> None:
        self.agent = agent
        self.journal = journal
        self.owners = owners
        self.commands = commands
        self.view_factory = view_factory
        self.lark = lark
        self.inputs = inputs
        self.stop_notes: dict[str, str] = {}  # /stop message id → what it stopped
        self._forgiven: dict[str, int] = {}  # message id → takeovers forgiven here
        self._waiting: set[str] = set()  # message ids held back by refused credentials

    async def run(self, msg: InboundMessage, sid: str) -> None:
        """Run `msg` as one turn of session `sid` and deliver (or release) its answer."""
        try:
            if self.inputs is not None:  # no model call for an answer that cannot be sent
                await self.inputs.client.token()
            await self._run(msg, sid)
        except CredentialsRefused as err:
            await self._wait_for_credentials(msg, err)

    async def _run(self, msg: InboundMessage, sid: str) -> None:
        name = await self.inputs.directory.name(msg.sender_open_id) if self.inputs else ""
        ctx = RequestContext(
            interface="lark",
            session_id=sid,
            sender_id=msg.sender_open_id,
            # an unsigned event's sender is not proven: no owner powers (no side effects)
            is_owner=msg.signed and await self.owners.check(msg.sender_open_id),
            chat_id=msg.chat_id,
            chat_type=msg.chat_type,
            thread_id=msg.thread_id,
            message_id=msg.message_id,
            sender_name=name,
        )
        bound = log.bind(message_id=msg.message_id, chat_id=msg.chat_id, session_id=sid)
        view = self.view_factory(msg, ctx)
        try:
            outcome = await self._produce(msg, ctx, view)
            if not await self._still_ours(msg.message_id):
                # Our lease lapsed (e.g. a busy loop) and another replica re-runs the message:
                # its answer is the one the user gets; posting ours too would answer twice.
                bound.warning("lark_claim_lost")
                view.abandon()
                await self.forgive(msg.message_id)
                return
            if not await self._deliver(view, outcome, bound):
                await self.journal.release(msg.message_id)  # a later sweep retries (bounded)
                return
            await self.mark_done(msg.message_id)
            bound.info("lark_turn_done", ok=isinstance(outcome, FinalAnswer))
        except (asyncio.CancelledError, CredentialsRefused):
            view.abandon()  # a live progress card must not outlive its turn
            raise

    async def _wait_for_credentials(self, msg: InboundMessage, err: CredentialsRefused) -> None:
        """Lark refuses the app's credentials: the message waits, unanswered but not lost.

        Its claim goes back without counting as an attempt, so the sweeper retakes it until
        the credentials work again (or after a restart), and then it is answered. The fix is
        in the log line (the token's own refusal is logged once a minute, this one per message).
        """
        first = msg.message_id not in self._waiting  # its retries are quieter
        if first and len(self._waiting) >= FORGIVEN_KEPT:
            self._waiting.clear()
        self._waiting.add(msg.message_id)
        (log.warning if first else log.debug)(
            "lark_reply_waiting",
            message_id=msg.message_id,
            code=err.code,
            error=err.msg,
            fix=err.hint,
        )
        try:
            await self.journal.forgive_attempt(msg.message_id)
            await self.journal.release(msg.message_id)
        except Exception:  # storage trouble: the lease runs out by itself, later
            log.warning("lark_release_failed", message_id=msg.message_id, exc_info=True)

    async def _deliver(self, view: TurnView, outcome: FinalAnswer | str, bound: Any) -> bool:
        """Post the answer; when Lark refuses it, tell the user. False: not known to be posted.

        A refused answer (too large, a card Lark cannot build, ...) is not re-run: the model
        and its tools would run again, side effects included, to fail the same way. Lark not
        answering (after the client's retries with the same uuids) is no refusal: the answer
        may be there, and a notice would follow it; the claim goes back instead, and the
        re-run's replies carry the same uuids, so Lark dedupes whatever did arrive.
        """
        try:
            if isinstance(outcome, FinalAnswer):
                await view.finish(outcome)
            else:
                await view.fail(outcome)
            return True
        except (asyncio.CancelledError, CredentialsRefused):
            raise  # credentials: the message waits for them (`_wait_for_credentials`)
        except LarkAPIError as err:  # Lark refused it: the code and hint say why, no traceback
            if not refused(err):
                bound.warning("lark_delivery_unconfirmed", code=err.code, error=str(err))
                return False
            bound.error("lark_delivery_failed", code=err.code, error=str(err), hint=err.hint)
        except Exception:
            bound.error("lark_delivery_failed", exc_info=True)
        try:
            await view.fail("the answer could not be delivered.")
            return True
        except (asyncio.CancelledError, CredentialsRefused):
            raise
        except LarkAPIError as err:  # Lark's own answer: its code and fix, no traceback
            bound.warning("lark_failure_notice_failed", code=err.code, error=str(err))
            return False  # the claim goes back for a later attempt
        except Exception:
            bound.warning("lark_failure_notice_failed", exc_info=True)
            return False

    async def forgive(self, message_id: str) -> None:
        """This replica, alive, lost or retook its own lapsed claim: that takeover is no failed
        attempt (`InboundJournal.forgive_attempt`). At most FORGIVE_AT_MOST times per message
        here, so a message whose turn stalls every replica still ends (after MAX_ATTEMPTS plus
        that many runs per replica)."""
        forgiven = self._forgiven.get(message_id, 0)
        if forgiven >= FORGIVE_AT_MOST:
            return
        if len(self._forgiven) >= FORGIVEN_KEPT:
            self._forgiven.clear()
        self._forgiven[message_id] = forgiven + 1
        try:
            await self.journal.forgive_attempt(message_id)
        except Exception:  # storage trouble: the takeover stays counted, nothing else breaks
            log.warning("lark_forgive_failed", message_id=message_id, exc_info=True)

    async def still_ours(self, message_id: str) -> bool:
        """Renew the claim; False when another replica holds it now, or it was answered or
        recalled. An entry that vanished (Redis restarted without its data) is still ours:
        nobody else has it, and Lark will not send the message again."""
        return await self.journal.renew(message_id) or await self.journal.status(message_id) is None

    async def lost_claims(self, message_ids: list[str]) -> list[str]:
        """Renew the claims (one batch); returns those no longer this replica's, as
        `still_ours` decides: not renewed, and not vanished from the journal."""
        held = await self.journal.renew_many(message_ids)
        not_renewed = [m for m in message_ids if m not in held]  # rare: one look each
        return [m for m in not_renewed if await self.journal.status(m) is not None]

    async def _still_ours(self, message_id: str) -> bool:
        """False only when the claim is provably no longer this replica's."""
        try:
            return await self.still_ours(message_id)
        except Exception:  # storage trouble: deliver rather than lose the answer
            log.warning("lark_lease_check_failed", message_id=message_id, exc_info=True)
            return True

    async def mark_done(self, message_id: str) -> None:
        """Record delivery; retried for a few seconds (a Redis restart) because a lost `done`
        means the turn runs again after its lease, tools included (Lark dedups the answer)."""
        for attempt in range(DONE_ATTEMPTS):
            try:
                await self.journal.done(message_id)
                return
            except Exception:
                if attempt == DONE_ATTEMPTS - 1:
                    raise
                log.warning("lark_journal_done_retry", message_id=message_id, exc_info=True)
                await asyncio.sleep(min(0.2 * 2**attempt, 2.0))  # 0.2 … 2 s: ~7 s in all

    async def _produce(
        self, msg: InboundMessage, ctx: RequestContext, view: TurnView
    ) -> FinalAnswer | str:
        """Run the command or the agent; a FinalAnswer, or a short reason safe to show."""
        command = parse_command(msg.text)
        if command is not None and command[0] == "/stop":
            return FinalAnswer(self.stop_notes.pop(msg.message_id, "Nothing to stop."))
        if command is not None:
            return await answer_command(self.commands, command, msg, ctx)
        timeout = self.lark().turn_timeout_seconds
        return await answer_message(self.agent, self.inputs, msg, ctx, view, timeout)
