"""A private Xvfb: started with `-displayfd` (the server picks a free display and says when ready).

Used by `larkbot serve` (`computer_use.start_xvfb: true`), the tests and the benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import subprocess
import tempfile
import time

from tools.desktop.xinput import DesktopError, X11Display

START_TIMEOUT = 10.0
SIZE = re.compile(r"^(\d{2,5})x(\d{2,5})$")


def parse_size(size: str) -> tuple[int, int]:
    """'1280x800' → (1280, 800); DesktopError naming the key otherwise."""
    match = SIZE.match(size.strip())
    if not match:
        raise DesktopError(f"computer_use.size {size!r} is not WIDTHxHEIGHT (e.g. 1280x800)")
    return int(match[1]), int(match[2])


def _read_display_number(fd: int, timeout: float) -> str:
    """Block (in a thread) until Xvfb writes its display number to `fd`, or `timeout` passes."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return ""
        chunk = os.read(fd, 32)
        if not chunk:  # Xvfb exited without answering
            return ""
        data += chunk
    return data.decode().strip()


class Xvfb:
    """One Xvfb process: `await start()`, then `.display`; `await stop()` ends it."""

    def __init__(self, size: str = "1280x800", display: str = "") -> None:
        self.width, self.height = parse_size(size)
        self.requested = display  # "" lets the server choose a free number
        self.display: X11Display | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115  (its complaints, kept for the error)

    async def start(self, timeout: float = START_TIMEOUT) -> X11Display:
        """Start the server and wait (bounded) until it accepts connections."""
        read_fd, write_fd = os.pipe()
        argv = ["Xvfb", *([self.requested] if self.requested else [])]
        argv += ["-screen", "0", f"{self.width}x{self.height}x24", "-nolisten", "tcp"]
        argv += ["-displayfd", str(write_fd)]
        try:
            self._proc = subprocess.Popen(
                argv,
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                start_new_session=True,  # a Ctrl-C in the terminal goes to us, not straight to it
            )
        except FileNotFoundError:
            os.close(read_fd)
            raise DesktopError("Xvfb is not installed (apt-get install xvfb)") from None
        finally:
            os.close(write_fd)
        try:
            number = await asyncio.to_thread(_read_display_number, read_fd, timeout)
        finally:
            os.close(read_fd)
        if not number:
            reason = self._complaint() or f"no answer in {timeout:g} s"
            await self.stop()
            raise DesktopError(f"Xvfb {self.requested or ''} did not start: {reason}".strip())
        self.display = X11Display(f":{number}")
        return self.display

    def _complaint(self) -> str:
        self._log.seek(0)
        lines = self._log.read().decode("utf-8", "replace").strip().splitlines()
        fatal = [ln for ln in lines if "Fatal" in ln or "already active" in ln]
        return (fatal or lines[-1:] or [""])[0][:300]

    async def stop(self) -> None:
        """Terminate the server (kill it after 5 s); safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)
        with contextlib.suppress(OSError):
            self._log.close()

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None
