"""The messages this replica holds (queued or running) and the leases that keep them its own."""

from __future__ import annotations

import asyncio

from larkbot.lark.claims.journal import InboundJournal
from larkbot.lark.turns.routing import Queued
from larkbot.lark.turns.turn_runner import TurnRunner
from larkbot.logs import get_logger
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.lark.turns.dispatcher")
LOST = "lost"  # Queued.stopped: another replica holds the claim now (it answers, not us)


def won(claim: asyncio.Future[bool]) -> bool:
    """The claim committed and this replica holds the message."""
    return claim.done() and not claim.cancelled() and claim.exception() is None and claim.result()


class Held:
    """Message id → its queued item; a heartbeat renews their leases while any is held.

    A lapsed lease (busy loop, slow database) lets the journal hand a message out again, but
    this replica must never run one twice: what is held here is excluded from recovery.
    """

    def __init__(self, journal: InboundJournal, runner: TurnRunner) -> None:
        self.journal = journal
        self.runner = runner
        self.items: dict[str, Queued] = {}
        self._heartbeat: asyncio.Task[None] | None = None

    def get(self, message_id: str) -> Queued | None:
        """The item holding `message_id`, if any."""
        return self.items.get(message_id)

    def add(self, item: Queued) -> None:
        """Hold `item`'s message (a redelivery of it is a duplicate while it is held)."""
        self.items[item.msg.message_id] = item
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(self._beat(), name="lark-leases")

    def drop(self, item: Queued) -> None:
        """No longer held here (unless a redelivery replaced `item`)."""
        if self.items.get(item.msg.message_id) is item:
            del self.items[item.msg.message_id]

    def stop(self, message_id: str, reason: str) -> bool:
        """Stop a message's turn: dropped when queued, cancelled (tools too) when running."""
        item = self.items.get(message_id)
        if item is None:
            return False
        item.stopped = reason
        if item.task is not None:
            item.task.cancel()
        return True

    async def close(self) -> None:
        """Stop renewing (the storage closes next)."""
        if self._heartbeat is not None:
            await cancel_and_wait(self._heartbeat)

    async def _beat(self) -> None:
        """Renew every claim held here, running or still queued, until none is left.

        A turn waiting behind a long one in its session (or for the global bound) holds its
        claim too: were its lease to run out, another replica would run it out of order, twice.
        """
        period = self.journal.lease_seconds / 3
        loop = asyncio.get_running_loop()
        began = loop.time()
        while self.items:
            # At a fixed rate: the time the renewals took comes out of the next wait, so a
            # slow round of them does not push the next one past the lease.
            await asyncio.sleep(max(0.0, began + period - loop.time()))
            began = loop.time()
            # In one call (a statement per RENEW_BATCH): one round trip per message made a
            # backlog of hundreds slower than the lease.
            if held := [m for m, i in self.items.items() if won(i.claim)]:
                await self._renew(held)

    async def _renew(self, message_ids: list[str]) -> None:
        """Extend a batch of leases; stop the turns whose claim another replica holds now.
        Storage trouble stops nothing: the next round tries again, well within the lease."""
        try:
            lost = await self.runner.lost_claims(message_ids)
        except Exception:
            log.warning("lark_lease_renew_failed", messages=len(message_ids), exc_info=True)
            return
        for message_id in lost:
            await self._claim_lost(message_id)

    async def _claim_lost(self, message_id: str) -> None:
        """The journal says another replica holds the claim now (our lease lapsed while this
        replica was starved), or it was answered or recalled there: stop the turn here before
        it posts anything (a live card included), and do not count that takeover as a crash."""
        item = self.items.get(message_id)
        if item is None or item.stopped:
            return
        log.warning("lark_claim_lost", message_id=message_id)
        self.stop(message_id, LOST)
        await self.runner.forgive(message_id)
