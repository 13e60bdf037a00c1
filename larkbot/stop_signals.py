"""Ctrl-C / SIGTERM for `serve`: the first one drains (answers in progress finish, bounded by
`server.drain_seconds`); a second one exits at once — whoever presses twice means it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from larkbot.logs import get_logger

log = get_logger("larkbot.server")
EXIT_AT_ONCE = 130  # 128 + SIGINT, as a shell reports an interrupted command
CLOSE_GRACE = 5.0  # past the drain: closing connections and storage, then exit regardless


class StopSignals:
    """Installed on the running loop: the first signal sets `stop`, the second exits now.

    Exiting now leaves what a crash leaves: claims whose lease runs out, retaken at the next
    start (the journal's crash recovery), so nothing that was acknowledged is lost.
    """

    def __init__(self, stop: asyncio.Event, drain_seconds: float) -> None:
        self.stop = stop
        self.drain_seconds = drain_seconds
        self._overdue: asyncio.TimerHandle | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Handle SIGTERM and SIGINT on `loop` (where the platform allows it)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.received, sig)

    def received(self, sig: int) -> None:
        """One signal: drain on the first, exit on the second."""
        name = signal.Signals(sig).name
        if not self.stop.is_set():
            log.info("stopping", signal=name, drain_seconds=self.drain_seconds)
            if sys.stderr.isatty():
                print(
                    f"\nStopping: answers in progress get up to {self.drain_seconds:g} s. "
                    "Press Ctrl-C again to stop at once.",
                    file=sys.stderr,
                    flush=True,
                )
            self.stop.set()
            return
        log.warning("stopped_at_once", signal=name)
        sys.stderr.flush()
        os._exit(EXIT_AT_ONCE)

    def bound_shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        """From now on the process ends within the drain time (plus CLOSE_GRACE), whatever
        part of the shutdown (a scheduler job, a web stream, storage) would wait longer."""
        self._overdue = loop.call_later(self.drain_seconds + CLOSE_GRACE, self._exit_overdue)

    def done(self) -> None:
        """The shutdown finished in time."""
        if self._overdue is not None:
            self._overdue.cancel()

    def _exit_overdue(self) -> None:
        log.warning("stop_overdue", seconds=self.drain_seconds + CLOSE_GRACE)
        sys.stderr.flush()
        os._exit(1)
