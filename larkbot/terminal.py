"""Reading terminal input off the event loop."""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import datetime


def _read(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


async def read_line(prompt: str = "") -> str | None:
    """One line from stdin (None at end of input), read in a daemon thread.

    Like `asyncio.to_thread(input)`, but the thread is a daemon: on Ctrl-C the process can
    exit without waiting for a line that will never come.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str | None] = loop.create_future()

    def work() -> None:
        try:
            value = _read(prompt)
        except BaseException as err:  # hand the error to the awaiting task
            loop.call_soon_threadsafe(_set_exception, future, err)
        else:
            loop.call_soon_threadsafe(_set_result, future, value)

    threading.Thread(target=work, name="larkbot-stdin", daemon=True).start()
    return await future


def _set_result(future: asyncio.Future[str | None], value: str | None) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[str | None], err: BaseException) -> None:
    if not future.done():
        future.set_exception(err)


def new_session_id() -> str:
    """A fresh terminal session id."""
    return f"cli:{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
