"""Path helpers shared by the file tools: expand ~, resolve symlinks, temp and secrets checks."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tools.base import ToolResult
from tools.builtin._protected import hard_link_into

MAX_OUTPUT_CHARS = 8000


def resolve(path: str) -> Path:
    """`~` expanded, made absolute and symlinks resolved (the file need not exist)."""
    return Path(os.path.expanduser(path)).resolve(strict=False)


def inside(path: Path, root: Path) -> bool:
    """True when resolved `path` is `root` or below it."""
    return path == root or root in path.parents


def temp_roots() -> tuple[Path, ...]:
    """/tmp and the system temp directory, resolved (on macOS /tmp is /private/tmp)."""
    return tuple({Path("/tmp").resolve(), Path(tempfile.gettempdir()).resolve()})


def in_secrets(path: Path, secrets_dir: Path) -> bool:
    """True when resolved `path` lies in the secrets directory, or is a hard link into it."""
    secrets = secrets_dir.expanduser().resolve(strict=False)
    return inside(path, secrets) or hard_link_into(path, [secrets]) is not None


def human_size(n: int) -> str:
    """1536 -> '1.5 KB'."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def cap(text: str, note: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Cut `text` so text + marker fit in `limit` characters; `note` says what to do next."""
    if len(text) <= limit:
        return text
    keep = limit - 60 - len(note)  # room for the marker
    marker = f"\n[… output capped at {limit:,} characters: {len(text) - keep:,} cut. {note}]"
    return text[:keep] + marker


def os_error(err: OSError, path: object) -> ToolResult:
    """An OSError (permission denied, …) as an error result naming the path."""
    return ToolResult(f"Error: {err.strerror or err}: {err.filename or path}", is_error=True)
