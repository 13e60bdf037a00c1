"""FileReadTool: read a text file; over 1 MB only with max_lines; secrets need consent per file."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from tools.base import BaseTool, ToolResult
from tools.builtin._fetched import FetchedFiles, file_source
from tools.builtin._paths import MAX_OUTPUT_CHARS, cap, human_size, in_secrets, os_error, resolve
from tools.runtime import ToolRuntime

MAX_BYTES = 1024 * 1024
SAMPLE = 8192
LINE_BYTES = 4 * MAX_OUTPUT_CHARS
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")


def looks_binary(sample: bytes) -> bool:
    """NUL bytes, or many control characters, mean binary."""
    if b"\0" in sample:
        return True
    controls = sum(1 for b in sample if b < 32 and b not in _TEXT_CONTROLS)
    return bool(sample) and controls / len(sample) > 0.3


def read_text(path: Path, max_lines: int | None) -> ToolResult:
    """Blocking read (run in a thread): the checks, then at most what the cap can show."""
    if not path.exists():
        return ToolResult(f"Error: {path} does not exist", is_error=True)
    if path.is_dir():
        return ToolResult(f"Error: {path} is a directory; use file_list", is_error=True)
    if not path.is_file():  # a FIFO or device could block this thread forever
        return ToolResult(f"Error: {path} is not a regular file", is_error=True)
    size = path.stat().st_size
    if size > MAX_BYTES and max_lines is None:
        return ToolResult(
            f"Error: {path} is {human_size(size)}, over the 1 MB limit. Call file_read again "
            "with max_lines (e.g. max_lines=200) to read its first lines.",
            is_error=True,
        )
    with path.open("rb") as fh:
        if looks_binary(fh.read(SAMPLE)):
            return ToolResult(f"{path} is a binary file ({human_size(size)}); not shown.")
        fh.seek(0)
        lines: list[str] = []
        chars, more = 0, False
        # readline(limit): a gigantic single line is never loaded whole
        for raw in iter(lambda: fh.readline(LINE_BYTES), b""):
            if (max_lines is not None and len(lines) >= max_lines) or chars > MAX_OUTPUT_CHARS:
                more = True
                break
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            chars += len(line)
    text = "".join(lines)
    if more and len(text) <= MAX_OUTPUT_CHARS:
        text += f"\n[… first {len(lines)} lines shown of a {human_size(size)} file]"
    return ToolResult(cap(text, "Use max_lines, or rg_search/shell to find the part you need."))


class FileReadTool(BaseTool):
    """Reads a local text file."""

    name = "file_read"
    description = (
        "Read a local text file (~ allowed). Files over 1 MB need max_lines; output is capped "
        "at 8,000 characters; binary files are reported, not shown."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, e.g. ~/notes/todo.md"},
            "max_lines": {
                "type": "integer",
                "minimum": 1,
                "description": "Read only the first N lines.",
            },
        },
        "required": ["path"],
    }
    fast_path = True
    private_data = True
    read_path_argument = "path"  # a sender may read the files they sent (larkbot.policy)
    no_compress = True  # bounded here; indentation matters in code

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt
        self.fetched: FetchedFiles = rt.services.setdefault("fetched_files", FetchedFiles())

    def _secret(self, path: str) -> Path | None:
        target = resolve(path)
        return target if in_secrets(target, self.rt.live.get().secrets_dir) else None

    def consent_check(self, **kw: Any) -> str | None:
        """Only files in the secrets directory need consent (symlinks resolved first)."""
        target = self._secret(str(kw.get("path", "")))
        return f"read secret file {target}" if target else None

    def consent_scope(self, **kw: Any) -> str:
        """One secret file per grant: a `file:` scope is never a directory prefix of another."""
        return f"file:{resolve(str(kw.get('path', '')))}"

    def touched_paths(self, **kw: Any) -> list[str]:
        """The file it reads or writes."""
        return [str(kw.get("path") or ".")]

    async def run(self, **kw: Any) -> ToolResult:
        """Read the file off the event loop; a received or downloaded file's text is untrusted."""
        max_lines = kw.get("max_lines")
        try:
            path = resolve(str(kw["path"]))
            result = await asyncio.to_thread(read_text, path, max_lines)
        except OSError as err:
            return os_error(err, kw.get("path"))
        source = None if result.is_error else file_source(path, self.rt.home, self.fetched)
        return replace(result, sources=(source,)) if source else result


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The file_read tool."""
    return [FileReadTool(rt)]
