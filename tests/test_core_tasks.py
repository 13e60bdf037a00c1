"""cancel_and_wait: stopping background tasks (streaming updater, lease loop, MCP supervisor);
wait_bounded: the webhook waiting for its claim without ever cancelling it; start_now: a task whose
first step runs at once (PostgreSQL claims sent before the rest of a burst's handlers run)."""

from __future__ import annotations

import asyncio

import pytest

from larkbot.tasks import cancel_and_wait, start_now, wait_bounded


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
    await asyncio.wait_for(cleaning.wait(), 5)
    stopper.cancel()  # e.g. shutdown cancelling the component that is stopping
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(stopper, 5)
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


async def test_then_runs_once_the_future_settles_however_the_wait_ended() -> None:
    loop = asyncio.get_running_loop()
    seen: list[object] = []
    done_already = loop.create_future()
    done_already.set_result("now")
    assert await wait_bounded(done_already, 5, lambda f: seen.append(f.result())) == "now"
    timed_out, abandoned = loop.create_future(), loop.create_future()
    with pytest.raises(TimeoutError):
        await wait_bounded(timed_out, 0.01, lambda f: seen.append(f.result()))
    waiter = asyncio.create_task(wait_bounded(abandoned, 30, lambda f: seen.append(f.result())))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert seen == ["now"]
    timed_out.set_result("late")
    abandoned.set_result("after cancel")
    await asyncio.sleep(0)
    assert seen == ["now", "late", "after cancel"]
    on_time = loop.create_future()
    loop.call_soon(on_time.set_result, "woken")
    assert await wait_bounded(on_time, 5, lambda f: seen.append(f.result())) == "woken"
    assert seen[-1] == "woken"


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
