"""Stopping a background task without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio
from typing import Any


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
