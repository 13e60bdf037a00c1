"""Process helpers of the shell tool: bounded output capture and process-group termination."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping

HEAD_BYTES = 5000  # kept from the start of the output
TAIL_BYTES = 2500  # kept from the end, where errors and summaries usually are
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
DRAIN_AFTER_EXIT = 1.0  # background children may hold the pipe open after the shell exits


class BoundedCapture:
    """Keeps the first HEAD_BYTES and the last TAIL_BYTES of a stream and counts the rest."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        """Add a chunk without ever holding more than HEAD_BYTES + 2 * TAIL_BYTES."""
        self.total += len(chunk)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]

    def text(self) -> str:
        """The kept output, with a marker where bytes were dropped."""
        tail = bytes(self.tail[-TAIL_BYTES:])
        cut = self.total - len(self.head) - len(tail)
        head = self.head.decode("utf-8", "replace")
        if cut <= 0:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        return f"{head}\n[… {cut} bytes of output cut …]\n{tail.decode('utf-8', 'replace')}"


def signal_group(pid: int, sig: int) -> None:
    """Send `sig` to the process group led by `pid`, if it still exists."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class OutputProtocol(asyncio.SubprocessProtocol):
    """Feeds the merged stdout/stderr into a BoundedCapture; futures for exit and output EOF.

    `exited` resolves when the process exits even if background children still hold the pipe
    (asyncio's `Process.wait()` also waits for the pipes to close, which such children delay).
    """

    def __init__(self, capture: BoundedCapture) -> None:
        loop = asyncio.get_running_loop()
        self.capture = capture
        self.exited: asyncio.Future[None] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        """Keep a bounded part of the output."""
        self.capture.feed(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        """The output pipe closed: every writer is gone."""
        if not self.eof.done():
            self.eof.set_result(None)

    def process_exited(self) -> None:
        """The shell itself exited."""
        if not self.exited.done():
            self.exited.set_result(None)


async def stop_group(pid: int, exited: asyncio.Future[None]) -> None:
    """SIGTERM the whole group, wait a little, then SIGKILL whatever is left of it."""
    signal_group(pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), KILL_GRACE)
    signal_group(pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), KILL_GRACE)


_CREDENTIAL_NAME = re.compile(
    r"(SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|ENCRYPT_KEY)",
    re.IGNORECASE,
)


def scrubbed_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for commands the model runs, without the bot's own credentials.

    `env` or `printenv` in a shell call must not hand the LLM key or the Lark app secret to
    the model (and so to whoever reads the chat); names that look like credentials are dropped.
    """
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if not _CREDENTIAL_NAME.search(k)}
