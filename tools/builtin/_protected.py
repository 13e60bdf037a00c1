"""Protected paths, one list for every tool: what holds credentials, code that runs, the bot itself.

The shell classifier and the file tools both judge paths here, so a rule added once holds for
`cat`, `cp`, `file_read` and `file_write` alike. Paths are plain absolute strings (already `~`-
expanded and normalised); checks by inode catch a hard link that points into a protected file
under another name.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

MAX_INODE_SCAN = 20_000  # files under the protected roots; past it, any hard link is suspect

# Relative to a home directory: reading these hands over an account or its credentials.
HOME_SECRETS = re.compile(
    r"^(\.ssh|\.aws|\.azure|\.gnupg|\.password-store|\.config/gcloud|\.larkbot)(/|$)|"
    r"^(\.netrc|\.git-credentials|\.pgpass|\.kube/config|\.docker/config\.json|\.npmrc|"
    r"\.pypirc|\.vault-token|\.config/gh/hosts\.yml)$"
)
# System-wide credentials and other processes' memory and environment (the bot's secrets).
SYSTEM_SECRETS = re.compile(
    r"^(/etc/(shadow|gshadow|sudoers)(-|$|/)|/etc/ssh/ssh_host_[^/]*key$|"
    r"/proc/[^/]+/(task/[^/]+/)?(environ|mem|auxv)$)"
)


def larkbot_home() -> str:
    """`$LARKBOT_HOME` (default `~/.larkbot`) as an absolute, normalised path."""
    return posixpath.normpath(os.path.expanduser(os.environ.get("LARKBOT_HOME") or "~/.larkbot"))


def home() -> str:
    """The user's home directory, normalised."""
    return posixpath.normpath(os.path.expanduser("~"))


def under(path: str, root: str) -> bool:
    """True when `path` is `root` or below it (both normalised absolute strings)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def home_relative(path: str) -> str | None:
    """`path` relative to the home directory ('' for the home itself), None outside it."""
    h = home()
    if h in ("", "/") or not under(path, h):
        return None
    return path[len(h) :].lstrip("/")


def secret_reason(path: str) -> str | None:
    """Why reading absolute `path` exposes credentials or the bot's own secrets, or None."""
    if SYSTEM_SECRETS.match(path):
        return "reads credentials or another process's environment"
    if under(path, larkbot_home()):
        return "reads the bot's own secrets, configuration or database ($LARKBOT_HOME)"
    rel = home_relative(path)
    if rel and HOME_SECRETS.match(rel):
        return "reads credentials in the home directory"
    return None


_GLOB = re.compile(r"[*?[]")
# Relative to a home directory: credential stores a glob may reach (`~/.ss*/id_*`).
_HOME_SECRET_DIRS = (".ssh", ".aws", ".azure", ".gnupg", ".password-store", ".config/gcloud")


def glob_reach(pattern: str, root: str) -> str | None:
    """'inside' when absolute glob `pattern` may name `root` or a path below it, 'above' when
    it may name only an ancestor of `root` (what a recursive read descends from), else None.

    Over-approximates bash: `*` is taken to match a leading dot as well.
    """
    if not _GLOB.search(pattern):
        return None
    parts, wanted = [p for p in pattern.split("/") if p], [p for p in root.split("/") if p]
    for i, part in enumerate(parts):
        if part == "**" or i >= len(wanted):
            return "inside"  # globstar (any depth), or a pattern below the root
        if not fnmatch.fnmatchcase(wanted[i], part):
            return None
    return "inside" if len(parts) >= len(wanted) else "above"


def glob_secret_reason(pattern: str) -> str | None:
    """Why absolute glob `pattern` may expand to the bot's own files or credentials, or None."""
    if glob_reach(pattern, larkbot_home()) == "inside":
        return "a glob that reaches the bot's own secrets, configuration or database"
    h = home()
    if h not in ("", "/") and any(
        glob_reach(pattern, f"{h}/{d}") == "inside" for d in _HOME_SECRET_DIRS
    ):
        return "a glob that reaches credentials in the home directory"
    return None


def protected_write_reason(path: str) -> str | None:
    """Why changing absolute `path` is dangerous wherever it lies, or None."""
    if under(path, larkbot_home()):
        return "changes the bot's own files ($LARKBOT_HOME)"
    if "/.git/" in path + "/" and not path.endswith("/.git/COMMIT_EDITMSG"):
        return "changes a .git directory (its hooks and config run code)"
    rel = home_relative(path)
    if rel is not None and (rel == "" or rel.startswith(".")):
        return "changes the home directory or a dotfile in it"
    return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def hard_link_into(target: Path, roots: Iterable[Path], skip: Iterable[Path] = ()) -> str | None:
    """How `target` is a second name (same inode) of a file under `roots`, or None.

    A hard link has no target to resolve: `ln ~/.larkbot/.secrets/key /tmp/k` makes /tmp/k the
    secret under another name, which only its inode (device and number) gives away. Past
    MAX_INODE_SCAN files it cannot be ruled out, and says so (fail closed).
    """
    try:
        st = target.stat()
    except OSError:
        return None
    if st.st_nlink < 2 or not target.is_file():
        return None
    wanted, seen, skipped = (st.st_dev, st.st_ino), 0, list(skip)
    for root in roots:
        names: Iterable[tuple[str, list[str], list[str]]] = (
            [(str(root.parent), [], [root.name])] if root.is_file() else os.walk(root)
        )
        for base, dirs, files in names:
            dirs[:] = [d for d in dirs if not any(_inside(Path(base, d), o) for o in skipped)]
            for name in files:
                seen += 1
                if seen > MAX_INODE_SCAN:
                    return "a hard link; too many protected files to rule it out"
                try:
                    other = os.stat(os.path.join(base, name), follow_symlinks=False)
                except OSError:
                    continue
                if (other.st_dev, other.st_ino) == wanted:
                    return f"a hard link to {os.path.join(base, name)}"
    return None
