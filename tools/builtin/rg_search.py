"""rg_search: regex search in file contents with ripgrep (respects .gitignore, bounded output)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tools.base import BaseTool, ToolResult
from tools.builtin._bounded_exec import SearchBinaryTool, run_bounded, search_root
from tools.builtin._paths import inside
from tools.runtime import ToolRuntime

MAX_RESULTS = 500
INSTALL_HINT = (
    "ripgrep (rg) is not installed or not on PATH: install it with `apt install ripgrep`, "
    "`brew install ripgrep` or `pip install ripgrep`."
)
_TYPE = re.compile(r"^[A-Za-z0-9_+-]{1,32}$")
_GLOB_SPECIAL = re.compile(r"([\\*?\[\]{}!])")
SECRETS_REFUSAL = (
    "rg_search does not search the secrets directory: file_read asks the owner for each "
    "secret file, and get_secret reads one by name"
)


def secrets_glob(cwd: Path, secrets_dir: Path | None) -> list[str]:
    """An rg exclusion keeping the secrets directory out of a search run from `cwd`."""
    if secrets_dir is None:
        return []
    secrets = secrets_dir.expanduser().resolve(strict=False)
    if secrets == cwd or not inside(secrets, cwd):
        return []
    rel = _GLOB_SPECIAL.sub(r"\\\1", secrets.relative_to(cwd).as_posix())
    return ["--glob", f"!/{rel}"]


def rg_argv(
    binary: str,
    pattern: str,
    target: str,
    case_sensitive: bool,
    file_type: str | None,
    exclude: list[str] | None = None,
) -> list[str]:
    """The rg command line: no config file, no colour, long lines cut, `--` before the pattern."""
    argv = [binary, "--no-config", "--line-number", "--with-filename", "--no-heading"]
    argv += exclude or []
    argv += ["--color", "never", "--max-columns", "300", "--max-columns-preview"]
    argv.append("--case-sensitive" if case_sensitive else "--ignore-case")
    if file_type:
        # A type is a whitelist that outranks rg's hidden-file rule; keep hidden files out.
        argv += ["--type", file_type, "--glob", "!.*"]
    return [*argv, "--", pattern, target]


class RgSearchTool(SearchBinaryTool):
    """rg_search: find lines matching a regex in files under a path, with ripgrep."""

    name = "rg_search"
    searches_trees = True
    description = (
        "Search file contents with ripgrep (regex). Returns `path:line:text` lines, skipping "
        "files ignored by .gitignore and hidden files. Use fd_find to find files by name."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "regex (or literal text) to find"},
            "path": {"type": "string", "default": ".", "description": "directory or file"},
            "case_sensitive": {"type": "boolean", "default": False},
            "file_type": {"type": "string", "description": "rg file type, e.g. py, js, md"},
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
        """Run rg and return at most max_results matching lines."""
        pattern = str(kwargs.get("pattern") or "")
        if not pattern:
            return ToolResult("rg_search needs a pattern", is_error=True)
        file_type = kwargs.get("file_type") or None
        if file_type is not None and not _TYPE.match(str(file_type)):
            return ToolResult(
                f"file_type must be an rg type name like py or js, not {file_type!r}", is_error=True
            )
        limit = self.limit(kwargs)
        root = search_root(kwargs.get("path"))
        if not root.exists():
            return ToolResult(f"Path not found: {root}", is_error=True)
        secrets = self._rt.live.get().secrets_dir if self._rt is not None else None
        if secrets is not None and inside(root, secrets.expanduser().resolve(strict=False)):
            return ToolResult(SECRETS_REFUSAL, is_error=True)
        binary = self.binary(["rg"])
        if binary is None:
            return ToolResult(INSTALL_HINT, is_error=True)
        cwd, target = (root, ".") if root.is_dir() else (root.parent, root.name)
        case = bool(kwargs.get("case_sensitive"))
        argv = rg_argv(binary, pattern, target, case, file_type, secrets_glob(cwd, secrets))
        try:
            out = await run_bounded(argv, cwd, limit)
        except OSError as err:
            return ToolResult(f"Cannot run {binary}: {err}", is_error=True)
        lines = [line.removeprefix("./") for line in out.lines]
        if out.returncode == 2 and not lines:
            return ToolResult(f"rg failed: {out.stderr or 'exit code 2'}", is_error=True)
        if not lines:
            return ToolResult(
                f"No matches for /{pattern}/ in {root} (ignored and hidden files skipped)."
            )
        head = f"Matches for /{pattern}/ in {root}"
        if out.truncated:
            head += f" (first {limit}; more exist: narrow the pattern, path or file_type)"
        if out.returncode == 2:
            head += f"\n(some files could not be searched: {out.stderr.splitlines()[0]})"
        return ToolResult(head + ":\n" + "\n".join(lines))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The rg_search tool."""
    return [RgSearchTool(rt)]
