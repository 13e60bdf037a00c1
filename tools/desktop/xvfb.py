"""A private Xvfb: started with `-displayfd` (the server picks a free display and says when ready).

It requires an MIT-MAGIC-COOKIE-1 from a file only this process can read (`-auth`), so other
local users cannot watch the screen or type into it; our own clients get it as `XAUTHORITY`.
Used by `larkbot serve` (`computer_use.start_xvfb: true`), the tests and the benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import shutil
import struct
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


def write_cookie(path: str) -> None:
    """An Xauthority file with one random cookie for any display (family Wild, no number)."""

    def counted(data: bytes) -> bytes:
        return struct.pack(">H", len(data)) + data

    entry = struct.pack(">H", 0xFFFF) + counted(b"") + counted(b"")
    entry += counted(b"MIT-MAGIC-COOKIE-1") + counted(os.urandom(16))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(entry)


class Xvfb:
    """One Xvfb process: `await start()`, then `.display`; `await stop()` ends it."""

    def __init__(self, size: str = "1280x800", display: str = "") -> None:
        self.width, self.height = parse_size(size)
        self.requested = display  # "" lets the server choose a free number
        self.display: X11Display | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115  (its complaints, kept for the error)
        self._private = tempfile.mkdtemp(prefix="larkbot-xvfb-")  # mode 0700: the cookie's home
        self.xauthority = os.path.join(self._private, "Xauthority")

    async def start(self, timeout: float = START_TIMEOUT) -> X11Display:
        """Start the server and wait (bounded) until it accepts connections."""
        write_cookie(self.xauthority)
        read_fd, write_fd = os.pipe()
        argv = ["Xvfb", *([self.requested] if self.requested else [])]
        argv += ["-screen", "0", f"{self.width}x{self.height}x24", "-nolisten", "tcp"]
        # -noreset: by default the server resets when its last client leaves (each xdotool run
        # on an empty desktop), re-centring the pointer and refusing connections meanwhile
        argv += ["-auth", self.xauthority, "-noreset"]
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
        self.display = X11Display(f":{number}", self.xauthority)
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
        shutil.rmtree(self._private, ignore_errors=True)

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None
