"""cancel_and_wait: stopping background tasks (streaming updater, lease loop, MCP supervisor)."""

from __future__ import annotations

import asyncio

import pytest

from larkbot.tasks import cancel_and_wait


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
