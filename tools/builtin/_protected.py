"""Protected paths, one list for every tool: what holds credentials, code that runs, the bot itself.

The shell classifier and the file tools both judge paths here, so a rule added once holds for
`cat`, `cp`, `file_read` and `file_write` alike. Paths are plain absolute strings (already `~`-
expanded and normalised); checks by inode catch a hard link that points into a protected file
under another name.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

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


def same_file_in(path: Path, directory: Path) -> bool:
    """True when `path` is a hard link to (the same inode as) a file inside `directory`."""
    try:
        st = path.stat()
    except OSError:
        return False
    if st.st_nlink < 2:
        return False
    try:
        for root, _dirs, files in os.walk(directory):
            for name in files:
                other = os.stat(os.path.join(root, name), follow_symlinks=False)
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return True
    except OSError:
        return True  # cannot tell: fail closed
    return False
