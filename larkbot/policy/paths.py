"""Protected paths: the bot's own files and every process's environment, asked for every time.

`$LARKBOT_HOME` holds the config, the database, `tools/` (plugins run with the bot's rights),
`.secrets/` and the inbox; `/proc/<pid>/environ` holds the bot's keys. Any tool that reads or
writes paths declares them (`BaseTool.touched_paths`); when one reaches a protected place the
policy turns the call into an `always` Ask (owners) or a refusal (anyone else). Symlinks are
resolved, and a hard link to a protected file is recognised by its inode. The knowledge
directory is the owner's notes, not the bot's internals, and stays open.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from larkbot.config import Settings
from tools.builtin._protected import hard_link_into

PROC_PRIVATE = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/(environ|mem|auxv)$")


def resolve(path: str) -> Path:
    """`~` expanded, absolute, symlinks resolved (the file need not exist)."""
    return Path(os.path.expanduser(path)).resolve(strict=False)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _sqlite_file(url: str) -> Path | None:
    if not url.startswith("sqlite"):
        return None
    raw = unquote(urlsplit(url).path)
    return resolve(raw[1:] if raw.startswith("//") else raw) if raw not in ("", "/") else None


def protected_roots(settings: Settings) -> tuple[list[Path], list[Path]]:
    """(protected roots, open exceptions inside them) for these settings."""
    roots = [resolve(str(settings.home)), resolve(str(settings.secrets_dir))]
    for extra in (settings.source, settings.lookup, _sqlite_file(settings.storage.url)):
        if extra is not None:
            roots.append(resolve(str(extra)))
    return roots, [resolve(str(settings.knowledge_dir))]


class ProtectedPaths:
    """Answers "does this path reach the bot's own files or a process environment?"."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self._settings = settings

    def _roots(self) -> tuple[list[Path], list[Path]]:
        return protected_roots(self._settings())

    def hit(self, path: str, tree: bool = False) -> str | None:
        """What protected place `path` reaches, or None. `tree`: a search root (rg, fd)."""
        if not path:
            return None
        target = resolve(path)
        if PROC_PRIVATE.match(str(target)):
            return f"{target} (a process environment: the bot's keys)"
        roots, open_dirs = self._roots()
        if any(_inside(target, d) for d in open_dirs):
            return None
        for root in roots:
            if _inside(target, root):
                return f"{target} (the bot's own files: {root})"
        if tree and any(_inside(root, target) for root in roots):
            return f"{target} (contains the bot's own files)"
        proc = Path("/proc")
        if tree and (_inside(target, proc) or _inside(proc, target)):
            return f"{target} (contains process environments)"
        link = hard_link_into(target, roots, skip=open_dirs)  # `ln config.yaml /tmp/x`
        return f"{target} ({link})" if link else None

    def first(self, paths: Iterable[str], tree: bool = False) -> str | None:
        """The first protected hit among `paths`."""
        for path in paths:
            found = self.hit(path, tree)
            if found:
                return found
        return None
