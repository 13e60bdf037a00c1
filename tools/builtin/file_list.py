"""FileListTool: a directory's entries, sorted, directories marked, sizes, bounded count."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from tools.base import BaseTool, ToolResult
from tools.builtin._paths import human_size, os_error, resolve
from tools.runtime import ToolRuntime

MAX_ENTRIES = 200


def _line(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return f"{entry.name} -> {os.readlink(entry.path)}"
        if entry.is_dir():
            return f"{entry.name}/"
        return f"{entry.name}  {human_size(entry.stat().st_size)}"
    except OSError:
        return f"{entry.name}  (unreadable)"


def list_dir(path: Path, limit: int = MAX_ENTRIES) -> ToolResult:
    """Blocking listing (run in a thread): only the shown entries are stat'ed."""
    if not path.exists():
        return ToolResult(f"Error: {path} does not exist", is_error=True)
    if not path.is_dir():
        return ToolResult(f"Error: {path} is not a directory; use file_read", is_error=True)
    with os.scandir(path) as it:
        entries = sorted(it, key=lambda e: (e.name.lower(), e.name))
    lines = [_line(e) for e in entries[:limit]]
    if len(entries) > limit:
        lines.append(f"… {len(entries) - limit} more")
    header = f"{path} ({len(entries)} entries)"
    return ToolResult("\n".join([header, *lines]) if lines else f"{header}: empty")


class FileListTool(BaseTool):
    """Lists a local directory."""

    name = "file_list"
    description = (
        "List a local directory (~ allowed): entries sorted by name, directories end with '/', "
        f"files show their size; at most {MAX_ENTRIES} entries."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory, e.g. ~/projects", "default": "."}
        },
    }
    private_data = True

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    def touched_paths(self, **kw: Any) -> list[str]:
        """The directory it lists."""
        return [str(kw.get("path") or ".")]

    async def run(self, **kw: Any) -> ToolResult:
        """List off the event loop."""
        try:
            return await asyncio.to_thread(list_dir, resolve(str(kw.get("path") or ".")))
        except OSError as err:
            return os_error(err, kw.get("path"))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The file_list tool."""
    return [FileListTool(rt)]
