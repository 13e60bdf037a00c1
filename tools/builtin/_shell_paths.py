"""Path policy of the shell classifier: which write, delete or permission targets are sensitive."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

DYN = "\x00"  # stands for text only known when the shell runs ($VAR, $(…), {a,b})
PSUB = "\x01"  # a process substitution <(…) used where a file name goes


def words(text: str) -> frozenset[str]:
    """A set of space-separated words (keeps long word lists readable)."""
    return frozenset(text.split())


# Top-level directories whose contents belong to the system, not to the user.
_SYSTEM_TOPS = words(
    "etc boot usr bin sbin lib lib32 lib64 libx32 sys proc root System Library var "
    "dev private home Users"
)
# Device files a redirect may write to harmlessly.
_DEV_SINKS = re.compile(r"^/dev/(null|zero|stdout|stderr|stdin|tty|fd/\d+|shm(/.*)?|pts/\d+)$")
_SAFE_UNDER = ("/var/tmp", "/var/folders", "/private/tmp", "/private/var/folders")
_HOME_ROOT = re.compile(r"^(?:/root|/home/[^/]+|/Users/[^/]+)(?:/(.*))?$")
# Files and directories in a home whose change hands over the account or its credentials.
_SENSITIVE_HOME = words(
    ".ssh .gnupg .aws .azure .kube .docker .bashrc .bash_profile .bash_login "
    ".bash_logout .profile .zshrc .zprofile .zshenv .zlogin .netrc .pgpass .npmrc "
    ".pypirc .gitconfig .git-credentials .config/autostart .config/systemd "
    ".larkbot/.secrets .larkbot/config.yaml"
)
BLOCK_DEVICE = re.compile(
    r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|nbd|mapper/|r?disk\d|disk/by-)"
)


def _home_relative(path: str) -> str | None:
    """The part after the home directory ('' for the home itself), or None if not in a home."""
    if path == "~" or path.startswith("~"):
        head, _, rest = path.partition("/")
        return rest if head.startswith("~") else None
    m = _HOME_ROOT.match(path)
    if m:
        return m.group(1) or ""
    home = str(Path.home())
    if home not in ("", "/") and (path == home or path.startswith(home + "/")):
        return path[len(home) + 1 :]
    return None


def clean(path: str) -> str:
    """Collapse `//`, `.` and `..` so `/etc/../etc//passwd` reads as `/etc/passwd`."""
    if not path.startswith("/"):
        return path
    return "/" + posixpath.normpath(path).lstrip("/") if path != "/" else "/"


def is_sensitive(path: str, *, sinks_ok: bool = False) -> bool:
    """True for `/`, system trees, block devices, a home itself and its credential files.

    `sinks_ok` lets /dev/null and friends through (redirects write there all the time).
    A path whose start is computed at run time is not decided here: see `is_computed`.
    """
    if not path or is_computed(path):
        return False
    rel = _home_relative(path)
    if rel is not None:
        rel = posixpath.normpath(rel) if rel else ""
        if rel in ("", "."):
            return True
        return any(rel == s or rel.startswith(s + "/") for s in _SENSITIVE_HOME)
    if not path.startswith("/"):
        return False
    path = clean(path)
    if path == "/":
        return True
    if sinks_ok and _DEV_SINKS.match(path):
        return False
    if any(path == s or path.startswith(s + "/") for s in _SAFE_UNDER):
        return False
    top = path.split("/")[1]
    if any(c in top for c in "*?[" + DYN):
        return True  # `/*` or `/e?c` may be any system directory
    if top in ("home", "Users"):
        return path.count("/") == 1  # /home itself; user files were handled above
    return top in _SYSTEM_TOPS


def is_computed(path: str) -> bool:
    """True when where the path points is only known at run time (`$VAR/x`, `$(…)`, `<(…)`)."""
    return path.startswith((DYN, PSUB))


def show(text: str, limit: int = 80) -> str:
    """A command as shown in a reason: one line, at most `limit` characters."""
    one = " ".join(text.split()).replace(DYN, "…").replace(PSUB, "<(…)")
    return one if len(one) <= limit else one[: limit - 1] + "…"
