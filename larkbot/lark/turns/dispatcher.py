"""Which messages run when: answer policy, fair share, journal claim, per-session order, drain.

One turn itself (context, command or agent, delivery) is `TurnRunner`'s."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable

from larkbot.config import LarkConfig
from larkbot.config_sections import LimitsConfig
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.claims.journal import InboundJournal
from larkbot.lark.delivery.turns import ViewFactory
from larkbot.lark.owners import Owners
from larkbot.lark.turns.answer import Agent
from larkbot.lark.turns.commands import Commands, parse_command
from larkbot.lark.turns.fairness import LimitNotices, Notify, SenderLimits, TurnSlots
from larkbot.lark.turns.held import LOST, Held, won
from larkbot.lark.turns.recovery import Resumable, kind_of
from larkbot.lark.turns.routing import Queued, enqueue_position, session_id_for, silence_reason
from larkbot.lark.turns.turn_input import TurnInputs
from larkbot.lark.turns.turn_runner import TurnRunner
from larkbot.logs import get_logger
from larkbot.storage.sessions import SessionStore

log = get_logger("larkbot.lark.turns.dispatcher")


class ClaimPending(Exception):
    """The journal claim did not commit within the ack deadline: answer 503, Lark redelivers."""


class Dispatcher:
    """Runs turns: arrival order within a session, sessions concurrently up to a global bound."""

    def __init__(
        self,
        *,
        agent: Agent,
        journal: InboundJournal,
        owners: Owners,
        commands: Commands,
        view_factory: ViewFactory,
        lark: Callable[[], LarkConfig],
        inputs: TurnInputs | None = None,  # names, media, quotes; None: the text alone
        sessions: SessionStore | None = None,  # topic follow-ups; forgetting recalled turns
        limits: Callable[[], LimitsConfig] = LimitsConfig,  # non-owners' fair share
        notify: Notify | None = None,  # limit notices
        ack_deadline: float = 2.0,
    ) -> None:
        self.journal = journal
        self.owners = owners
        self.lark = lark
        self.sessions = sessions
        self.runner = TurnRunner(agent, journal, owners, commands, view_factory, lark, inputs)
        self.accepting = True
        self.slots = TurnSlots(lark().max_concurrent_turns, limits().owner_reserved_turns)
        self.fair = SenderLimits(limits)
        self.notices = LimitNotices(notify, self.fair)
        self._queues: dict[str, deque[Queued]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.held = Held(journal, self.runner)  # queued or running here: never run twice
        self.ack_deadline = ack_deadline  # the longest a 200 waits for its claim (Lark: 3 s)
        self.kinds: dict[str, Resumable] = {}  # e.g. document comments (lark/events)

    def recovers(self, kind: str, handler: Resumable) -> None:
        """Crash recovery hands claims whose payload says `{"kind": kind}` to `handler`."""
        self.kinds[kind] = handler

    async def accept(self, msg: InboundMessage) -> str:
        """Apply the policy, take the journal claim and queue the turn; returns the outcome."""
        if not self.accepting:
            return "draining"
        if silent := await silence_reason(msg, self.lark(), self.sessions):
            log.debug("lark_message_ignored", message_id=msg.message_id, reason=silent)
            return "ignored"
        if (held := self.held.get(msg.message_id)) is not None:  # its turn is still here
            await self._committed(held.claim)
            return "duplicate"
        command = parse_command(msg.text)
        stop = command is not None and command[0] == "/stop"
        owner = msg.signed and await self.owners.check(msg.sender_open_id)
        counted = not owner and not stop  # /stop always gets through
        if counted and (refusal := self.fair.admit(msg.sender_open_id, msg.chat_id)):
            self.notices.tell(msg, refusal)
            return "limited"
        if stop:
            self.runner.stop_notes[msg.message_id] = await self._stop_session(msg, owner)
        # synchronously, so the session keeps arrival order
        item = self._enqueue(msg, owner, counted)
        item.claim = asyncio.create_task(self.journal.claim(msg.message_id, msg.to_json()))
        item.claim.add_done_callback(lambda claim: self._claim_ended(item, claim))
        return "queued" if await self._committed(item.claim) else "duplicate"

    async def _committed(self, claim: asyncio.Future[bool]) -> bool:
        """Wait for the claim to be committed: only then may Lark get its 200 (never resend).

        Past `ack_deadline` (inside Lark's 3 s) this raises, the webhook answers 503 and Lark
        redelivers; the claim (shielded) may still land meanwhile, and the redelivery is then a
        duplicate. A failed claim raises too (StorageUnavailable): nothing was stored.
        """
        try:
            async with asyncio.timeout(self.ack_deadline):
                return await asyncio.shield(claim)
        except TimeoutError:
            raise ClaimPending(f"claim not committed within {self.ack_deadline} s") from None

    def _claim_ended(self, item: Queued, claim: asyncio.Future[bool]) -> None:
        """A failed claim: Lark's redelivery must be claimed afresh, not be a "duplicate"."""
        if claim.cancelled() or claim.exception() is not None:
            self.held.drop(item)
            if not claim.cancelled():
                log.error("lark_claim_failed", exc_info=claim.exception())

    def cancel(self, message_id: str, reason: str = "recalled") -> bool:
        """Stop a message's turn: dropped when queued, cancelled (tools too) when running."""
        if not self.held.stop(message_id, reason):
            return False
        log.info("lark_turn_cancelled", message_id=message_id, reason=reason)
        return True

    async def recall(self, message_id: str) -> str:
        """Its turn here stops; claimed on another replica, it is marked done (nothing posted)."""
        if self.cancel(message_id, "recalled"):
            return "recalled"
        try:
            if not message_id or await self.journal.status(message_id) != "claimed":
                return "ignored"  # answered already, or never seen
            await self.journal.done(message_id)  # the running replica finds its claim gone
        except Exception:  # storage trouble: the answer may still come; nothing else breaks
            log.warning("lark_recall_journal_failed", message_id=message_id, exc_info=True)
            return "ignored"
        return "recalled elsewhere"

    async def _stop_session(self, msg: InboundMessage, owner: bool) -> str:
        """/stop: cancel this session's turns that the sender may stop (owners: any)."""
        queue = self._queues.get(session_id_for(msg), deque())
        mine = [i for i in queue if owner or i.msg.sender_open_id == msg.sender_open_id]
        stopped = [i for i in mine if not i.stopped and self.cancel(i.msg.message_id, "stopped")]
        if stopped:
            return f"Stopped {len(stopped)} answer(s)."
        others = len(queue) > len(mine)
        return "Only an owner can stop someone else's answer." if others else "Nothing to stop."

    async def resume(self, msg: InboundMessage) -> None:
        """Queue a message whose claim this replica already holds (crash recovery)."""
        owner = msg.signed and await self.owners.check(msg.sender_open_id)
        self._enqueue(msg, owner).claim.set_result(True)

    def _enqueue(self, msg: InboundMessage, owner: bool, counted: bool = False) -> Queued:
        item = Queued(msg, owner=owner, counted=counted)
        self.held.add(item)
        sid = session_id_for(msg)
        queue = self._queues.get(sid)
        if queue is None:
            queue = self._queues[sid] = deque()
            self._track(asyncio.create_task(self._worker(sid, queue), name=f"lark-session:{sid}"))
        queue.insert(enqueue_position(queue, owner), item)
        return item

    def _forget(self, item: Queued) -> None:
        """The item left its queue: no longer held here, no longer counted against its sender."""
        self.held.drop(item)
        if item.counted:
            item.counted = False
            self.fair.finished(item.msg.sender_open_id, item.msg.chat_id)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _worker(self, sid: str, queue: deque[Queued]) -> None:
        try:
            while queue:
                item = queue[0]
                await asyncio.wait([item.claim])  # never cancels the claim
                if won(item.claim):
                    await self._run_item(item, sid)
                self.runner.stop_notes.pop(item.msg.message_id, None)
                self._forget(queue.popleft())
        except asyncio.CancelledError:
            await self._abandon(queue)
            raise
        finally:
            if self._queues.get(sid) is queue:
                del self._queues[sid]

    async def _abandon(self, queue: deque[Queued]) -> None:
        """The session's turns will not run here (drain): recovery retakes the claimed at once."""
        for item in queue:
            self._forget(item)
            if won(item.claim):
                with contextlib.suppress(Exception):
                    await self.journal.release(item.msg.message_id)

    async def _run_item(self, item: Queued, sid: str) -> None:
        """Run one turn as its own task, so a recall or /stop cancels it and not the session."""
        started = time.time()
        if not item.stopped:
            async with self.slots.hold(item.owner):  # owners first; some slots theirs alone
                item.task = asyncio.create_task(self.runner.run(item.msg, sid))
                try:
                    await item.task
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if not item.stopped or (current is not None and current.cancelling()):
                        raise  # the worker itself is cancelled (drain)
                except Exception:  # one broken turn must not strand the session
                    log.error("lark_turn_crashed", message_id=item.msg.message_id, exc_info=True)
        if item.stopped and item.stopped != LOST:  # never re-run, never answered
            await self.runner.mark_done(item.msg.message_id)
        if item.stopped == "recalled" and item.task is not None and self.sessions is not None:
            # what was recalled must not stay in the history (a shared one, in groups)
            await self.sessions.delete_since(sid, started)

    async def recover(self) -> int:
        """Requeue unfinished claims whose lease expired (crashed turns; other kinds go to their
        `recovers` handler); returns how many."""
        if not self.accepting:
            return 0
        queued = 0
        exclude = set(self.held.items).union(*(h.running() for h in self.kinds.values()))
        for payload in await self.journal.reclaim_expired(exclude=exclude):
            if (handler := self.kinds.get(kind_of(payload))) is not None:
                try:
                    queued += await handler.resume(payload)
                except Exception:  # one broken claim must not stop the others' recovery
                    log.error("lark_recovery_failed", exc_info=True)
                continue
            try:
                msg = InboundMessage.from_json(payload)
            except (ValueError, TypeError):
                log.error("lark_recovery_bad_payload")
                continue
            if msg.message_id in self.held.items:  # its lease lapsed, but the turn is still here
                log.warning("lark_lease_lapsed_locally", message_id=msg.message_id)
                await self.runner.forgive(msg.message_id)  # we retook our own live claim
                continue
            await self.resume(msg)
            queued += 1
        if queued:
            log.info("lark_recovered_turns", count=queued)
        return queued

    @property
    def queued(self) -> int:
        """Messages waiting in this replica's session queues (the running ones included)."""
        return sum(len(q) for q in self._queues.values())

    async def join(self, timeout: float) -> bool:
        """Wait (bounded) until no turn is queued or running; True when idle."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._tasks:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return False
            await asyncio.wait(set(self._tasks), timeout=left)
        return True

    async def drain(self, timeout: float) -> bool:
        """Stop accepting, wait `timeout` for running turns, cancel the rest (claims released)."""
        self.accepting = False
        await self.join(timeout)
        pending = set(self._tasks)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self.held.close()  # the storage closes next
        await self.notices.close()  # the HTTP client closes next
        if pending:
            log.warning("lark_drain_cancelled", turns=len(pending))
        return not pending
