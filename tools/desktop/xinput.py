"""Mouse and keyboard on an X display: `xdotool` with argv lists (never a shell), text via `xclip`.

`xdotool type` drops characters outside the keyboard map (Chinese, most accents), so such text
is put on the CLIPBOARD by an `xclip` this module owns and pasted with ctrl+v.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from dataclasses import dataclass

COMMAND_TIMEOUT = 15.0  # one xdotool run (a drag with pauses stays far below it)
CLIPBOARD_WAIT = 3.0  # for xclip to own the CLIPBOARD before ctrl+v is pressed
STDERR_LIMIT = 400


class DesktopError(Exception):
    """The display or an input program failed; the message says what and how to fix it."""


@dataclass(frozen=True)
class X11Display:
    """Where input and screenshots go: a display name and, if the server wants one, a cookie."""

    name: str
    xauthority: str = ""

    def env(self) -> dict[str, str]:
        """The environment of a child program that talks to this display."""
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
        env["DISPLAY"] = self.name
        if self.xauthority:
            env["XAUTHORITY"] = self.xauthority
        elif "XAUTHORITY" in os.environ:
            env["XAUTHORITY"] = os.environ["XAUTHORITY"]
        return env


async def _wait_or_kill(proc: asyncio.subprocess.Process, timeout: float) -> None:
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except BaseException:  # timeout or cancellation: no child outlives the call
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise


async def run_x(
    display: X11Display,
    argv: list[str],
    stdin: bytes | None = None,
    timeout: float = COMMAND_TIMEOUT,
) -> str:
    """Run an X program (argv, no shell) on `display`; its stdout, or DesktopError."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=display.env(),
        )
    except FileNotFoundError:
        raise DesktopError(f"{argv[0]} is not installed (apt-get install {argv[0]})") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise DesktopError(f"{argv[0]} {argv[1]} did not finish in {timeout:g} s") from None
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    problem = err.decode("utf-8", "replace").strip()[:STDERR_LIMIT]
    # xdotool exits 0 after "No such key name 'x'. Ignoring it." — an unknown key is an error
    if proc.returncode != 0 or "No such key name" in problem:
        raise DesktopError(f"{argv[0]} {argv[1]} failed: {problem or f'exit {proc.returncode}'}")
    return out.decode("utf-8", "replace")


async def xdotool(display: X11Display, *args: str, timeout: float = COMMAND_TIMEOUT) -> str:
    """`xdotool ARGS…` on the display."""
    return await run_x(display, ["xdotool", *args], timeout=timeout)


def typeable(text: str) -> bool:
    """Whether `xdotool type` types `text` faithfully (printable ASCII, newlines, tabs)."""
    return all(" " <= c <= "~" or c in "\n\t" for c in text)


class Clipboard:
    """Owns the CLIPBOARD with one `xclip` at a time (it must live until the paste is read)."""

    def __init__(self) -> None:
        self._owner: asyncio.subprocess.Process | None = None

    async def paste(self, display: X11Display, text: str) -> None:
        """Put `text` on the CLIPBOARD, wait until it is served, press ctrl+v."""
        await self.release()
        try:
            owner = await asyncio.create_subprocess_exec(
                "xclip", "-quiet", "-selection", "clipboard", "-i",
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,  # never our pipe: a lingering xclip would hold it
                stderr=subprocess.DEVNULL,
                env=display.env(),
            )  # fmt: skip
        except FileNotFoundError:
            raise DesktopError("xclip is not installed (apt-get install xclip)") from None
        self._owner = owner
        assert owner.stdin is not None
        owner.stdin.write(text.encode("utf-8"))
        await owner.stdin.drain()
        owner.stdin.close()
        await self._served(display, text)
        await xdotool(display, "key", "--clearmodifiers", "ctrl+v")

    async def _served(self, display: X11Display, text: str) -> None:
        """Poll `xclip -o` (bounded) until the new owner answers with `text`."""
        deadline = time.monotonic() + CLIPBOARD_WAIT
        while True:
            with contextlib.suppress(DesktopError):
                got = await run_x(display, ["xclip", "-o", "-selection", "clipboard"], timeout=2)
                if got == text:
                    return
            if self._owner is not None and self._owner.returncode is not None:
                raise DesktopError("xclip exited before it owned the clipboard")
            if time.monotonic() > deadline:
                raise DesktopError(f"the clipboard did not take the text in {CLIPBOARD_WAIT:g} s")
            await asyncio.sleep(0.02)

    async def release(self) -> None:
        """Stop the current owner (the CLIPBOARD empties)."""
        owner, self._owner = self._owner, None
        if owner is not None and owner.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                owner.terminate()
            with contextlib.suppress(TimeoutError):
                await _wait_or_kill(owner, 2.0)
