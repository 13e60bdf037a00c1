"""Stopping a background task without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from collections.abc import Coroutine, Generator
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


async def wait_bounded(future: asyncio.Future[T], seconds: float) -> T:
    """`future`'s result, waiting at most `seconds` (TimeoutError); never cancels `future`.

    `wait_for(shield(f), t)` does the same with two more futures and a task.
    """
    if future.done():
        return future.result()
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    future.add_done_callback(wake)
    timer = loop.call_later(seconds, wake)
    try:
        await woken
    finally:
        timer.cancel()
        future.remove_done_callback(wake)
    if not future.done():
        raise TimeoutError
    return future.result()


class Deadlines:
    """Fails each watched future still pending `seconds` after it was watched, with TimeoutError.

    One timer for all of them instead of a `call_later` each: every webhook waits like this for
    its claim, and a timer per event is a heap push and a cancel on the path before its 200.
    The deadlines come in the order they were set (one `seconds` for all), so a queue is enough.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._queue: deque[tuple[float, asyncio.Future[Any]]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def watch(self, future: asyncio.Future[Any]) -> None:
        """Fail `future` with TimeoutError unless it is done within `seconds` from now."""
        loop = asyncio.get_running_loop()
        self._queue.append((loop.time() + self.seconds, future))
        if self._timer is None:
            self._timer = loop.call_at(self._queue[0][0], self._expire)

    def _expire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now, queue = loop.time(), self._queue
        while queue and (queue[0][1].done() or queue[0][0] <= now):
            _, future = queue.popleft()
            if not future.done():
                future.set_exception(TimeoutError())
        if queue:
            self._timer = loop.call_at(queue[0][0], self._expire)


def start_now(coro: Coroutine[Any, Any, T], name: str) -> asyncio.Future[T]:
    """Run `coro` up to its first suspension now, then on as a task (3.12's eager start).

    A task created in a loop iteration first runs after every callback already queued for that
    iteration. Started here, its first step (a write to a socket, say) happens before them.
    That first step runs in the caller's task, so it must not use the current task
    (`asyncio.timeout`, `current_task`); everything after it runs in the new task.
    """
    if sys.version_info >= (3, 12):
        return asyncio.eager_task_factory(asyncio.get_running_loop(), coro, name=name)
    loop = asyncio.get_running_loop()
    try:
        waiting_on = coro.send(None)
    except StopIteration as stop:
        done: asyncio.Future[T] = loop.create_future()
        done.set_result(stop.value)
        return done
    except BaseException as err:
        failed: asyncio.Future[T] = loop.create_future()
        failed.set_exception(err)
        return failed
    return loop.create_task(_Resumed(coro, waiting_on), name=name)


class _Resumed(Coroutine[Any, Any, T]):
    """`coro`, already run to its first suspension on `waiting_on`, as a task's coroutine."""

    def __init__(self, coro: Coroutine[Any, Any, T], waiting_on: Any) -> None:
        self._coro = coro
        self._first = waiting_on
        self._started = False
        self.__qualname__ = getattr(coro, "__qualname__", "coroutine")  # the task's repr

    def send(self, value: Any) -> Any:
        """The task's step: first park it on what `coro` waits for, then resume `coro`."""
        if not self._started:
            self._started = True
            return self._first
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        """A cancel (or error) of the task, into `coro`."""
        if not self._started:  # cancelled before its first step: what a running task's cancel
            self._started = True  # does to the future it parks on
            if isinstance(self._first, asyncio.Future):
                self._first.cancel()
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)

    def close(self) -> None:
        """Close `coro`."""
        self._coro.close()

    @property
    def cr_frame(self) -> Any:
        """`coro`'s frame, for the task's stack (`Task.get_stack`, `print_stack`)."""
        return getattr(self._coro, "cr_frame", None)

    def __await__(self) -> Generator[Any, None, T]:
        return self  # type: ignore[return-value]

    def __iter__(self) -> _Resumed[T]:
        return self

    def __next__(self) -> Any:
        return self.send(None)
