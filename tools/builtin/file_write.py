"""FileWriteTool: write or append a file, creating parents; consent per directory, temp exempt."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tools.base import BaseTool, ToolResult
from tools.builtin._paths import in_secrets, inside, os_error, resolve, temp_roots
from tools.runtime import ToolRuntime


def write_text(path: Path, content: str, append: bool) -> ToolResult:
    """Blocking write (run in a thread)."""
    if path.is_dir():
        return ToolResult(f"Error: {path} is a directory", is_error=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as fh:
        fh.write(content)
    verb = "Appended" if append else "Wrote"
    return ToolResult(f"{verb} {len(content)} characters to {path}")


class FileWriteTool(BaseTool):
    """Writes or appends a local text file."""

    name = "file_write"
    description = (
        "Write text to a local file (~ allowed), creating parent directories; append=true adds "
        "to the end instead of replacing the file."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, e.g. ~/notes/todo.md"},
            "content": {"type": "string", "description": "The text to write."},
            "append": {"type": "boolean", "default": False, "description": "Append, not replace."},
        },
        "required": ["path", "content"],
    }
    side_effect = True

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    def consent_check(self, **kw: Any) -> str | None:
        """Any path needs consent except under the temp directories (the secrets dir never)."""
        target = resolve(str(kw.get("path", "")))
        secret = in_secrets(target, self.rt.live.get().secrets_dir)
        if not secret and any(inside(target, root) for root in temp_roots()):
            return None
        verb = "append to" if kw.get("append") else "write"
        return f"{verb} {target} ({len(str(kw.get('content', '')))} characters)"

    def consent_scope(self, **kw: Any) -> str:
        """The resolved parent directory: a grant covers that directory and its subtree."""
        return str(resolve(str(kw.get("path", ""))).parent)

    def touched_paths(self, **kw: Any) -> list[str]:
        """The file it reads or writes."""
        return [str(kw.get("path") or ".")]

    async def run(self, **kw: Any) -> ToolResult:
        """Write off the event loop."""
        target = resolve(str(kw["path"]))
        append = bool(kw.get("append", False))
        try:
            return await asyncio.to_thread(write_text, target, str(kw["content"]), append)
        except OSError as err:
            return os_error(err, kw.get("path"))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The file_write tool."""
    return [FileWriteTool(rt)]
