"""Path policy of the shell classifier: which write, delete or permission targets are sensitive.

It also holds `flags`, the one GNU-style argv splitter: the rules (`_shell_rules` and its rule
modules) and the recursive-read guard (`_shell_reach`) both import this module, so neither keeps
a copy that could drift (a copy without `--` handling let `rg -- -----BEGIN ~` through).
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
import re
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tools.builtin._protected import (
    glob_secret_reason,
    home,
    home_relative,
    protected_write_reason,
    secret_reason,
    under,
)

DYN = "\x00"  # stands for text only known when the shell runs ($VAR, $(…), {a,b})
PSUB = "\x01"  # a process substitution <(…) used where a file name goes


def words(text: str) -> frozenset[str]:
    """A set of space-separated words (keeps long word lists readable)."""
    return frozenset(text.split())


@dataclass
class Flags:
    """An argv split into short flag letters, long flags, operands; `computed` if any is $…."""

    shorts: set[str]
    longs: set[str]
    operands: list[str]
    computed: bool
    values: dict[str, str] = field(default_factory=dict)  # `--name=value` -> {"--name": value}
    # Long options the command's own table cannot resolve (unknown or an ambiguous prefix).
    unknown: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Options:
    """A command's getopt_long table, so `--recur` is read as `--recursive` the way it does."""

    takes: dict[str, str]  # long name -> "" (no argument), "=" (required), "=?" (optional)
    same: dict[str, str]  # long name -> the option it is another spelling of (--colour, --color)
    short_args: str  # short letters that take an argument (rest of the word or the next word)

    def resolve(self, name: str) -> str | None:
        """The option `--name` means: an exact name, else the one a unique prefix names."""
        if name in self.takes:
            return self.same.get(name, name)
        hits = {self.same.get(n, n) for n in self.takes if n.startswith(name)}
        return hits.pop() if len(hits) == 1 else None  # none: unknown; several: ambiguous


def options(table: str, short_args: str, same: str = "") -> Options:
    """Options from `name name= name=?` words and `alias:name` pairs (kept short in rule files)."""
    takes = {}
    for word in table.split():
        name, eq, opt = word.partition("=")
        takes[name] = eq + opt
    aliases = dict(pair.split(":", 1) for pair in same.split())
    return Options(takes, aliases, short_args)


def flags(args: list[str], spec: Options | None = None) -> Flags:
    """Split options from operands the GNU way (options may follow operands; `--` ends them).

    With the command's `spec`, long options are resolved as getopt_long does (`--recur` is
    `--recursive`) and an option's argument is consumed, not taken for an operand or for `--`
    (`grep -e -- -r ~` is recursive); without it every word is judged by its own spelling.
    """
    out = Flags(set(), set(), [], any(a.startswith((DYN, PSUB)) for a in args))
    ended = False
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if ended or a == "-" or not a.startswith("-"):
            out.operands.append(a)
        elif a == "--":
            ended = True  # `grep -r -- -----BEGIN ~`: after it, `-…` is a pattern or a path
        elif a.startswith("--"):
            name, eq, value = a.partition("=")
            if spec is not None:
                full = spec.resolve(name[2:])
                if full is None:
                    out.unknown.append(name)
                    continue
                name = "--" + full
                if not eq and spec.takes[full] == "=" and i < len(args):
                    eq, value, i = "=", args[i], i + 1
            out.longs.add(name)
            if eq:
                out.values[name] = value
        elif spec is None:
            out.shorts.update(a[1:])
        else:
            i = _shorts(a[1:], args, i, spec, out)
    return out


def _shorts(letters: str, args: list[str], i: int, spec: Options, out: Flags) -> int:
    """Read one `-abc` cluster; a letter that takes an argument ends it (`-rdrecurse`)."""
    for n, letter in enumerate(letters):
        out.shorts.add(letter)
        if letter in spec.short_args:
            rest = letters[n + 1 :]
            if rest:
                out.values["-" + letter] = rest
            elif i < len(args):
                out.values["-" + letter], i = args[i], i + 1
            break
    return i


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


_TEMP_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", posixpath.normpath(tempfile.gettempdir()))
# Directories that are never a workspace: writing "here" would change the system or the home.
_NOT_WORKSPACE = re.compile(r"^/(etc|boot|bin|sbin|lib\w*|proc|sys|dev|usr|var|opt|srv|root)?$")


def absolute(path: str, cwd: str | None) -> str | None:
    """Where `path` points (`~` expanded, made absolute against `cwd`), None when unknown."""
    if not path or DYN in path or PSUB in path:
        return None
    if path.startswith("~"):
        head, sep, rest = path.partition("/")
        base = os.path.expanduser(head)
        if base.startswith("~"):
            return None  # ~user that does not exist here: unknown
        path = base + sep + rest
    elif not path.startswith("/"):
        if cwd is None:
            return None
        path = cwd.rstrip("/") + "/" + path
    return clean(path)


def is_workspace(cwd: str | None) -> bool:
    """True when `cwd` may be written freely: not /, a system tree, the home or above it."""
    if cwd is None or _NOT_WORKSPACE.match(cwd):
        return False
    h = home()
    if under(h, cwd):  # the home itself or one of its ancestors
        return False
    return protected_write_reason(cwd + "/x") is None


def write_reason(path: str, cwd: str | None, workspace: str | None = None) -> str | None:
    """Why writing, deleting or truncating `path` is dangerous, or None.

    Fine are /tmp and the `workspace` (the directory the call runs in); `cwd` is where a `cd`
    has moved the script since, which relative paths are resolved against.
    """
    workspace = workspace or cwd
    if not path or path.startswith(PSUB) or _DEV_SINKS.match(path):
        return None
    if DYN in path:
        return "writes to a path computed at run time"
    where = absolute(path, cwd)
    if where is None:
        return "writes where the working directory is only known at run time"
    reason = protected_write_reason(where)
    if reason:
        return reason
    if any(under(where, root) for root in _TEMP_ROOTS):
        return None
    if workspace is not None and is_workspace(workspace) and under(where, workspace):
        return None
    if home_relative(where) is not None:
        return "changes files in the home directory outside the working directory"
    return "changes files outside the working directory and /tmp"


_PROC_SECRET = re.compile(r"^/proc/[^/]*(/task/[^/]*)?/(environ|mem|auxv|fd/.+|map_files/.+)$")
_PROC_ROOT = re.compile(r"^/proc/[^/]+(/task/[^/]+)?/(root|cwd)(?=/|$)")


def read_reason(word: str, cwd: str | None) -> str | None:
    """Why an argument naming `word` (also `@file`, `k=@file`, `--opt=file`) reads secrets."""
    for candidate in _path_spellings(word):
        if _PROC_SECRET.match(candidate.replace(DYN, "1")):
            return "reads another process's environment, memory or open files"
        proc = _PROC_ROOT.match(candidate.replace(DYN, "1"))
        if proc:  # /proc/1/root/etc is /etc; /proc/$PPID/cwd is the bot's working directory
            rest = candidate[proc.end() :].lstrip("/")
            candidate = ("/" if proc.group(2) == "root" else (cwd or "/")).rstrip("/") + "/" + rest
        if BLOCK_DEVICE.match(candidate):  # every file is on it, the bot's secrets too
            return "reads a raw disk device"
        where = absolute(candidate, cwd)
        if where is not None:
            reason = secret_reason(where) or glob_secret_reason(where)
            if reason:
                return reason
    return None


def _path_spellings(word: str) -> list[str]:
    out = [word]
    if word.startswith("file:"):  # an SQLite or browser URI: file:/path?mode=ro
        out.append("/" + word[5:].split("?", 1)[0].lstrip("/") if word[5:6] == "/" else word[5:])
    if "@" in word:
        out.append(word.rsplit("@", 1)[1])
    if word.startswith("-") and "=" in word:
        out.append(word.split("=", 1)[1])
    return [w for w in out if w.startswith(("/", "~", ".")) or "/" in w]


_URL_HOST = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/\s]*@)?(\[[^\]]*\]|[^/:?#\s]+)", re.I)
_EMBEDDED_IP = re.compile(r"^(\d+[.-]\d+[.-]\d+[.-]\d+|0x[0-9a-f]+)\.(nip|sslip|xip)\.io$", re.I)
_METADATA_NAMES = words("metadata.google.internal metadata metadata.azure.com instance-data")


def metadata_host(word: str) -> bool:
    """True when `word` (a URL or host) names a cloud metadata address in any spelling."""
    m = _URL_HOST.match(word.strip("'\""))
    if m is None:
        return False
    host = m.group(1).strip("[]").rstrip(".").lower()
    if host in _METADATA_NAMES:
        return True
    embedded = _EMBEDDED_IP.match(host)
    if embedded:
        host = embedded.group(1).replace("-", ".")
    address = _ip(host)
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in net for net in _METADATA_NETS)


_METADATA_NETS = [
    ipaddress.ip_network(n) for n in ("169.254.0.0/16", "100.100.100.200/32", "fd00:ec2::/32")
]


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Parse `host` as an address the way inet_aton does (hex, octal, decimal, short forms)."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return None
    if not re.fullmatch(r"[0-9a-fx.]+", host) or not host[:1].isdigit():
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None
