"""Group commit: many concurrent writers, one transaction per group, one writer.

Each `submit` queues an item and waits for its result. A single flusher task hands every item
queued so far to `flush` (one transaction) and resolves the waiters; whatever arrives while that
commit runs forms the next group. So at most one commit is in flight, nothing waits for a timer,
and under load a group is everything that arrived during the previous commit (well under 1 ms).

A commit starts in the loop iteration after its first item, once that iteration's other callbacks
ran; with `send_at`, it starts inside the submit that queues that many (`start_now`), so a commit
whose time is a round trip (PostgreSQL) overlaps the rest of the iteration's submitters.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from larkbot.logs import get_logger
from larkbot.tasks import start_now

log = get_logger("larkbot.storage.group_commit")

Item = TypeVar("Item")
Result = TypeVar("Result")
# Called with an item's outcome (its result, or the error that failed its group), whatever
# became of its future: a waiter that gave up (a deadline, a cancel) must not hide the outcome.
Settled = Callable[[Any], None]
_Entry = tuple[Item, "asyncio.Future[Result]", Settled | None]


class StorageUnavailable(Exception):
    """The write could not be committed (its group's transaction failed); nothing was stored."""


class GroupCommit(Generic[Item, Result]):
    """Batches concurrent `submit`s into `flush(items) -> results` calls, one at a time."""

    def __init__(
        self,
        flush: Callable[[list[Item]], Awaitable[list[Result]]],
        what: str,
        max_group: int = 512,
        send_at: int = 0,
    ) -> None:
        self._flush = flush
        self.what = what  # for error messages: "journal claim"
        self.max_group = max_group
        self.send_at = send_at
        self._pending: list[_Entry[Item, Result]] = []
        self._active = False  # a flusher is committing (one at a time)
        self._task: asyncio.Future[None] | None = None
        self.groups = 0  # transactions committed so far
        self.items = 0  # items committed so far

    async def submit(self, item: Item) -> Result:
        """Queue `item`; returns its result once its group committed (StorageUnavailable if not)."""
        return await self.submit_soon(item)

    def submit_soon(self, item: Item, settled: Settled | None = None) -> asyncio.Future[Result]:
        """Queue `item` now; the future resolves when its group committed (or fails).

        `settled(result or error)` runs as the group ends, even when the future was failed or
        cancelled by its waiter meanwhile; it is called directly, not as a future callback.
        """
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future, settled))
        if not self._active:
            if self.send_at and len(self._pending) >= self.send_at:
                if self._task is not None:  # created for this group, not started: replaced
                    self._task.cancel()
                self._task = start_now(self._run(), name=f"group-commit:{self.what}")
            elif self._task is None or self._task.done():
                self._task = asyncio.create_task(self._run(), name=f"group-commit:{self.what}")
        return future

    async def _run(self) -> None:
        self._active = True
        try:
            while self._pending:
                group = self._pending[: self.max_group]
                del self._pending[: len(group)]
                await self._commit(group)
        finally:
            self._active = False

    async def _commit(self, group: list[_Entry[Item, Result]]) -> None:
        try:
            results = await self._flush([item for item, _, _ in group])
        except asyncio.CancelledError:
            _fail(group, f"{self.what} not stored: closing")
            raise
        except Exception as err:  # only this group's waiters fail; the next group retries
            log.error("group_commit_failed", what=self.what, size=len(group), exc_info=True)
            _fail(group, f"{self.what} not stored: {type(err).__name__}", err)
            return
        self.groups += 1
        self.items += len(group)
        for (_, future, settled), result in zip(group, results, strict=True):
            resolve(future, settled, result)

    async def close(self) -> None:
        """Stop the flusher; items still queued fail with StorageUnavailable."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        pending, self._pending = self._pending, []
        _fail(pending, f"{self.what} not stored: closing")


def _fail(
    group: list[_Entry[Item, Result]], reason: str, cause: BaseException | None = None
) -> None:
    for _, future, settled in group:
        failed = StorageUnavailable(reason)
        failed.__cause__ = cause
        resolve(future, settled, failed)


def resolve(future: asyncio.Future[Any], settled: Settled | None, outcome: Any) -> None:
    """Tell `settled` the outcome (a result, or an error), then `future` if it still waits.

    Its waiter may have given up (a deadline failed it, a cancel): the outcome still counts.
    """
    if settled is not None:
        settled(outcome)
    if future.done():
        return
    if isinstance(outcome, asyncio.CancelledError):
        future.cancel()
    elif isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
