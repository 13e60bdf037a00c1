"""fd_find: find files and directories by name with fd (respects .gitignore, bounded output)."""

from __future__ import annotations

import re
from typing import Any

from tools.base import BaseTool, ToolResult
from tools.builtin._bounded_exec import SearchBinaryTool, run_bounded, search_root
from tools.runtime import ToolRuntime

MAX_RESULTS = 1000
INSTALL_HINT = (
    "fd is not installed or not on PATH (Debian/Ubuntu name it fdfind): install it with "
    "`apt install fd-find`, `brew install fd` or `cargo install fd-find`."
)
FILE_TYPES = {
    "f": "f",
    "file": "f",
    "d": "d",
    "dir": "d",
    "directory": "d",
    "l": "l",
    "symlink": "l",
    "x": "x",
    "executable": "x",
    "e": "e",
    "empty": "e",
}
_EXTENSION = re.compile(r"^[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,31}$")


def fd_argv(
    binary: str, pattern: str, file_type: str | None, extension: str | None, limit: int
) -> list[str]:
    """The fd command line: no colour, fd's own cap one past the limit, `--` before the pattern."""
    argv = [binary, "--color", "never", "--max-results", str(limit + 1)]
    if file_type:
        argv += ["--type", file_type]
    if extension:
        argv += ["--extension", extension]
    return [*argv, "--", pattern]


class FdFindTool(SearchBinaryTool):
    """fd_find: list files or directories whose name matches a regex, with fd."""

    name = "fd_find"
    searches_trees = True
    description = (
        "Find files or directories by name (regex) under a path with fd, skipping files "
        "ignored by .gitignore and hidden files. Use rg_search to search file contents."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "regex on the name; empty lists all"},
            "path": {"type": "string", "default": ".", "description": "directory to search"},
            "file_type": {
                "type": "string",
                "enum": ["f", "d", "l", "x", "e"],
                "description": "f file, d directory, l symlink, x executable, e empty",
            },
            "extension": {"type": "string", "description": "file extension, e.g. py or yaml"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 50},
        },
        "required": ["pattern"],
    }
    private_data = True  # reads the owner's files: owner-only in Lark unless shared
    max_results = MAX_RESULTS

    def touched_paths(self, **kwargs: Any) -> list[str]:
        """The root it searches (recursively)."""
        return [str(kwargs.get("path") or ".")]

    async def run(self, **kwargs: Any) -> ToolResult:
        """Run fd in the search directory and return at most max_results relative paths."""
        pattern = str(kwargs.get("pattern") or "")
        raw_type = str(kwargs.get("file_type") or "").lower()
        file_type = FILE_TYPES.get(raw_type) if raw_type else None
        if raw_type and file_type is None:
            return ToolResult("file_type must be f, d, l, x or e", is_error=True)
        extension = str(kwargs.get("extension") or "").lstrip(".") or None
        if extension is not None and not _EXTENSION.match(extension):
            return ToolResult(f"extension looks wrong: {extension!r}", is_error=True)
        limit = self.limit(kwargs)
        root = search_root(kwargs.get("path"))
        if not root.is_dir():
            return ToolResult(f"Not a directory: {root}", is_error=True)
        binary = self.binary(["fd", "fdfind"])
        if binary is None:
            return ToolResult(INSTALL_HINT, is_error=True)
        argv = fd_argv(binary, pattern, file_type, extension, limit)
        try:
            out = await run_bounded(argv, root, limit)
        except OSError as err:
            return ToolResult(f"Cannot run {binary}: {err}", is_error=True)
        if out.returncode not in (0, None) and not out.lines:
            return ToolResult(
                f"fd failed: {out.stderr or f'exit code {out.returncode}'}", is_error=True
            )
        if not out.lines:
            return ToolResult(f"Nothing named like /{pattern}/ under {root}.")
        head = f"Found under {root}"
        if out.truncated:
            head += f" (first {limit}; more exist: narrow the pattern, extension or path)"
        return ToolResult(head + ":\n" + "\n".join(out.lines))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The fd_find tool."""
    return [FdFindTool(rt)]
