"""Group commit: many concurrent writers, one transaction per group, one writer.

Each `submit` queues an item and waits for its result. A single flusher task hands every item
queued so far to `flush` (one transaction) and resolves the waiters; whatever arrives while that
commit runs forms the next group. So at most one commit is in flight, nothing waits for a timer,
and under load a group is everything that arrived during the previous commit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from larkbot.logs import get_logger

log = get_logger("larkbot.storage.group_commit")

Item = TypeVar("Item")
Result = TypeVar("Result")


class StorageUnavailable(Exception):
    """The write could not be committed (its group's transaction failed); nothing was stored."""


class GroupCommit(Generic[Item, Result]):
    """Batches concurrent `submit`s into `flush(items) -> results` calls, one at a time."""

    def __init__(
        self,
        flush: Callable[[list[Item]], Awaitable[list[Result]]],
        what: str,
        max_group: int = 512,
    ) -> None:
        self._flush = flush
        self.what = what  # for error messages: "journal claim"
        self.max_group = max_group
        self._pending: list[tuple[Item, asyncio.Future[Result]]] = []
        self._task: asyncio.Task[None] | None = None
        self.groups = 0  # transactions committed so far
        self.items = 0  # items committed so far

    async def submit(self, item: Item) -> Result:
        """Queue `item`; returns its result once its group committed (StorageUnavailable if not)."""
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"group-commit:{self.what}")
        return await future

    async def _run(self) -> None:
        while self._pending:
            group = self._pending[: self.max_group]
            del self._pending[: len(group)]
            await self._commit(group)

    async def _commit(self, group: list[tuple[Item, asyncio.Future[Result]]]) -> None:
        try:
            results = await self._flush([item for item, _ in group])
        except asyncio.CancelledError:
            _fail(group, f"{self.what} not stored: closing")
            raise
        except Exception as err:  # only this group's waiters fail; the next group retries
            log.error("group_commit_failed", what=self.what, size=len(group), exc_info=True)
            _fail(group, f"{self.what} not stored: {type(err).__name__}", err)
            return
        self.groups += 1
        self.items += len(group)
        for (_, future), result in zip(group, results, strict=True):
            if not future.done():  # its waiter may have been cancelled
                future.set_result(result)

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
    group: list[tuple[Item, asyncio.Future[Result]]],
    reason: str,
    cause: BaseException | None = None,
) -> None:
    for _, future in group:
        if not future.done():
            failed = StorageUnavailable(reason)
            failed.__cause__ = cause
            future.set_exception(failed)
