"""cancel_and_wait: stopping background tasks (streaming updater, lease loop, MCP supervisor);
wait_bounded and Deadlines: the webhook waiting for its claim, bounded, never cancelling it;
start_now: a task whose first step runs at once (PostgreSQL claims sent during a burst)."""

from __future__ import annotations

import asyncio

import pytest

from larkbot.tasks import Deadlines, cancel_and_wait, start_now, wait_bounded


async def test_cancel_and_wait_stops_the_task() -> None:
    task = asyncio.create_task(asyncio.Event().wait())
    await cancel_and_wait(task)
    assert task.cancelled()


async def test_cancel_and_wait_does_not_swallow_the_callers_cancel() -> None:
    """Regression: `suppress(CancelledError)` around the wait also ate a cancel of the stopper."""
    cleaning, release = asyncio.Event(), asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cleaning.set()
            await release.wait()  # cleanup that takes a while
            raise

    worker = asyncio.create_task(slow_to_stop())
    stopper = asyncio.create_task(cancel_and_wait(worker))
    await asyncio.wait_for(cleaning.wait(), 30)
    stopper.cancel()  # e.g. shutdown cancelling the component that is stopping
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(stopper, 30)
    assert worker.done()


async def test_wait_bounded_returns_the_result_or_its_error() -> None:
    loop = asyncio.get_running_loop()
    ok, failing = loop.create_future(), loop.create_future()
    loop.call_soon(ok.set_result, 7)
    loop.call_soon(failing.set_exception, ValueError("storage down"))
    assert await wait_bounded(ok, 5) == 7
    with pytest.raises(ValueError, match="storage down"):
        await wait_bounded(failing, 5)


async def test_wait_bounded_times_out_but_leaves_the_future_running() -> None:
    pending = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await wait_bounded(pending, 0.01)
    assert not pending.done()  # the claim commits later; a redelivery then finds it
    pending.set_result(True)
    assert await wait_bounded(pending, 5) is True


async def test_a_cancelled_waiter_does_not_cancel_the_future() -> None:
    pending = asyncio.get_running_loop().create_future()
    waiter = asyncio.create_task(wait_bounded(pending, 30))
    await asyncio.sleep(0)
    waiter.cancel()  # the HTTP client went away mid-ack
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not pending.cancelled()


async def test_deadlines_fail_what_is_still_pending_with_one_timer() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(0.05)
    on_time, late, abandoned = (loop.create_future() for _ in range(3))
    for future in (on_time, late, abandoned):
        deadlines.watch(future)
    on_time.set_result("in time")
    abandoned.cancel()  # its waiter went away
    with pytest.raises(TimeoutError):
        await late
    assert on_time.result() == "in time" and abandoned.cancelled()
    later = loop.create_future()
    deadlines.watch(later)  # the queue emptied: the timer is armed again
    with pytest.raises(TimeoutError):
        await later
    kept = loop.create_future()
    deadlines.watch(kept)
    kept.set_result(1)
    assert await kept == 1


async def test_start_now_runs_the_first_step_before_what_is_already_queued() -> None:
    order: list[str] = []
    gate = asyncio.get_running_loop().create_future()

    async def job() -> str:
        order.append("job starts")
        await gate
        order.append("job resumes")
        return "done"

    asyncio.get_running_loop().call_soon(order.append, "queued callback")
    task = start_now(job(), name="test")
    assert order == ["job starts"]  # no loop iteration in between
    assert "<locals>.job()" in repr(task)  # named after its coroutine, not the driver
    assert [frame.f_code.co_name for frame in task.get_stack()] == ["job"]
    gate.set_result(None)
    assert await task == "done"
    assert order == ["job starts", "queued callback", "job resumes"]


async def test_start_now_passes_results_errors_and_cancels_through() -> None:
    async def at_once() -> int:
        return 7

    async def fails() -> None:
        await asyncio.sleep(0)
        raise OSError("boom")

    async def fails_at_once() -> None:
        raise ValueError("early")

    cleaned: list[str] = []

    async def parks() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cleaned.append("cancelled inside")
            raise

    assert await start_now(at_once(), name="t") == 7
    with pytest.raises(OSError, match="boom"):
        await start_now(fails(), name="t")
    with pytest.raises(ValueError, match="early"):
        await start_now(fails_at_once(), name="t")
    at_once_cancelled = start_now(parks(), name="t")
    at_once_cancelled.cancel()  # before the task's first step: it never parked
    parked = start_now(parks(), name="t")
    await asyncio.sleep(0)  # the task's first step: parked on the coroutine's future
    parked.cancel()
    for task in (at_once_cancelled, parked):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert cleaned == ["cancelled inside"] * 2
