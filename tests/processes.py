"""Processes in tests: `larkbot serve` as a child, free ports, and finding this host's processes by
command line (for tests proving a command left nothing behind)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as dead: it can no longer write anything)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone, possibly while being read
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def running(token: str) -> list[int]:
    """Live processes whose command line holds `token`, by their pid on this host.

    Found by name, not by a pid the command writes: inside the sandbox `$$` is a pid of its
    own PID namespace, not this host's.
    """
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def until_gone(token: str, within: float = 30.0) -> bool:
    """Wait up to `within` seconds for no live process to hold `token`; False if one still does."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not running(token):
            return True
        await asyncio.sleep(0.02)
    return False


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def serve_process(
    env: dict[str, str], *args: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`python -m larkbot serve ARGS` with `env`, stderr piped; killed if still running after."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "larkbot", "serve", *args, env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def stop_serve(proc: asyncio.subprocess.Process, within: float = 30.0) -> str:
    """SIGTERM, as a deployment stops it; its stderr once it has exited (bounded)."""
    proc.send_signal(signal.SIGTERM)
    _, stderr = await asyncio.wait_for(proc.communicate(), within)
    return stderr.decode()
