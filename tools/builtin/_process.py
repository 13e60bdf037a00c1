"""Process helpers of the shell tool: bounded output, process-group signals, the environment."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence

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


# What a command sees of the bot's environment: these names, plus those the owner lists in
# `tools.shell.env`. An allow-list, because a deny-list kept OPENAI_KEY and DATABASE_URL.
BASE_ENV = ("PATH", "HOME", "LANG", "TERM", "TZ", "USER")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def shell_environment(
    extra: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for commands the model runs: only allow-listed names are passed on."""
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in (*BASE_ENV, *extra) if k in source}
    env.setdefault("PATH", DEFAULT_PATH)
    return env
