"""Run a search binary without a shell and read at most N lines of its output (rg, fd)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.base import BaseTool
from tools.runtime import ToolRuntime

_STDERR_LIMIT = 4096
_LINE_LIMIT = 1 << 20  # the StreamReader buffer; rg's --max-columns keeps lines far shorter


def scripts_dir() -> str:
    """The running interpreter's bin directory (PyPI's `ripgrep` puts `rg` there)."""
    return sysconfig.get_path("scripts")


def find_binary(names: Iterable[str], extra_dirs: Iterable[str] = ()) -> str | None:
    """The first of `names` found on PATH, then in `extra_dirs`."""
    names = list(names)
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    for folder in extra_dirs:
        for name in names:
            found = shutil.which(name, path=folder)
            if found:
                return found
    return None


def search_root(path: str | None) -> Path:
    """The search path with ~ and $VARS expanded, made absolute."""
    raw = os.path.expandvars(os.path.expanduser(path or "."))
    return Path(raw).resolve()


@dataclass(frozen=True)
class Output:
    """What a bounded run produced."""

    lines: list[str]
    truncated: bool
    returncode: int | None
    stderr: str


async def _drain(stream: asyncio.StreamReader, keep: bytearray) -> None:
    """Read stderr to the end (so the child never blocks on it), keeping the first bytes."""
    while chunk := await stream.read(65536):
        if len(keep) < _STDERR_LIMIT:
            keep.extend(chunk[: _STDERR_LIMIT - len(keep)])


async def run_bounded(argv: list[str], cwd: Path, max_lines: int) -> Output:
    """Run argv in cwd; stop reading and kill it once more than max_lines lines arrived."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=_LINE_LIMIT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    err = bytearray()
    drain = asyncio.create_task(_drain(proc.stderr, err))
    lines: list[str] = []
    truncated = finished = False
    try:
        while raw := await proc.stdout.readline():
            if len(lines) == max_lines:
                truncated = True
                break
            lines.append(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        finished = not truncated
    finally:
        # Killed when enough lines arrived, or when we were cancelled or failed midway.
        if not finished and proc.returncode is None:
            proc.kill()
        await proc.wait()
        await drain
    code = proc.returncode if finished else None
    return Output(lines, truncated, code, err.decode(errors="replace").strip())


class SearchBinaryTool(BaseTool):
    """What rg_search and fd_find share: the runtime, where to look for the binary, the limit."""

    private_data = True
    max_results: int = 50  # the schema's maximum, set by each tool

    def __init__(
        self, rt: ToolRuntime | None = None, extra_dirs: Iterable[str] | None = None
    ) -> None:
        self._rt = rt
        self._extra_dirs = [scripts_dir()] if extra_dirs is None else list(extra_dirs)

    def limit(self, kwargs: dict[str, Any]) -> int:
        """`max_results` clamped to 1..the tool's maximum (default 50)."""
        return max(1, min(self.max_results, int(kwargs.get("max_results") or 50)))

    def binary(self, names: Iterable[str]) -> str | None:
        """The first of `names` on PATH or in the extra directories."""
        return find_binary(names, self._extra_dirs)
