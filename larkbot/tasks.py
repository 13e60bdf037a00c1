"""Stopping a background task without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait for it to end; a cancel aimed at the caller still propagates.

    The common `task.cancel(); with suppress(CancelledError): await task` also swallows a
    cancel of the *caller* arriving during the wait (e.g. shutdown cancelling a stop()).
    """
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except Exception:  # the task's own failure is its business; it ended, which is all we need
        pass


async def wait_bounded(
    future: asyncio.Future[T],
    seconds: float,
    then: Callable[[asyncio.Future[T]], None] | None = None,
) -> T:
    """`future`'s result, waiting at most `seconds` (TimeoutError); never cancels `future`.

    `wait_for(shield(f), t)` does the same with two more futures and a task; this sits on the
    webhook's path before its 200. `then(future)` runs once `future` is done, whether or not
    this wait ended first, in the callback that wakes the waiter: one callback, not two.
    """
    if future.done():
        if then is not None:
            then(future)
        return future.result()
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    def done(finished: asyncio.Future[T]) -> None:
        if then is not None:
            then(finished)
        wake()

    future.add_done_callback(done)
    timer = loop.call_later(seconds, wake)
    try:
        await woken
    finally:
        timer.cancel()
        if then is None:
            future.remove_done_callback(done)
    if not future.done():
        raise TimeoutError
    return future.result()
