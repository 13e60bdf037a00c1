"""The shell's sandbox: bubblewrap, a PID namespace of its own, the bot's own files not there.

Every shell call runs under `bwrap` with the whole filesystem bound as it is (writes land where
they did), a fresh /proc in its own PID namespace (no other process's environment or memory is
visible), and none of the bot's secrets (`$LARKBOT_HOME/.secrets/`, an empty read-only tmpfs
there), config file or SQLite database with its -wal, -shm and -journal files (`/dev/null` over
each): masked by name, wherever they are (a symlink's target too). `$LARKBOT_HOME/tools/`, the
plugins the bot loads into its own process, is read-only.

`tools.shell.sandbox`: `auto` (default) uses bwrap when it can create namespaces here and runs
commands without it otherwise (doctor says so), `bwrap` refuses to run commands without it,
`off` never uses it. Without the sandbox only the command classifier guards these files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings

PROBE_SECONDS = 10.0
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap)"


@dataclass(frozen=True)
class Isolation:
    """Whether shell commands can run sandboxed here, with the binary or the reason why not."""

    available: bool
    binary: str = ""
    why_not: str = ""


_probed: dict[str, Isolation] = {}


def probe() -> Isolation:
    """Run `bwrap … true` once per binary (cached): True when it can make the namespaces here."""
    binary = shutil.which("bwrap")
    if binary is None:
        return Isolation(False, why_not="bwrap is not installed")
    if binary not in _probed:
        argv = [binary, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc"]
        argv += ["--cap-drop", "ALL", "true"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=PROBE_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            _probed[binary] = Isolation(False, binary, f"bwrap did not run: {err}")
        else:
            first = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[0]
            why = f"bwrap cannot create namespaces here ({first or f'exit {done.returncode}'})"
            _probed[binary] = (
                Isolation(True, binary)
                if done.returncode == 0
                else Isolation(False, binary, why + "; user namespaces may be off")
            )
    return _probed[binary]


def describe(settings: Settings) -> tuple[bool, str]:
    """(sandboxed, one line saying which isolation shell commands get), for doctor."""
    mode = settings.tools.shell.sandbox
    if mode == "off":
        return False, "off (tools.shell.sandbox: off): only the command classifier guards"
    found = probe()
    if found.available:
        return True, (
            f"bwrap sandbox ({found.binary}): own PID namespace; $LARKBOT_HOME's secrets, "
            "database and config file hidden"
        )
    if mode == "bwrap":
        return False, f"tools.shell.sandbox is bwrap but {found.why_not}: commands are refused"
    return False, f"none, {found.why_not}: only the command classifier guards"


async def check_sandbox(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """`larkbot doctor`'s line: which isolation shell commands get (a warning when none)."""
    sandboxed, line = await asyncio.to_thread(describe, settings)
    if sandboxed or settings.tools.shell.sandbox == "off":
        return CheckResult("shell_sandbox", True, line)
    if settings.tools.shell.sandbox == "bwrap":
        fix = f"{INSTALL_HINT} and allow user namespaces, or set tools.shell.sandbox: auto"
        return CheckResult("shell_sandbox", False, line, fix)
    # auto without bwrap (a container without user namespaces): a warning, not a failure
    fix = f"{INSTALL_HINT} where user namespaces are allowed, or set tools.shell.sandbox: off"
    return CheckResult("shell_sandbox", True, f"WARNING: {line} (fix: {fix})")


def sqlite_file(url: str) -> Path | None:
    """The database file `storage.url` names, when it is SQLite."""
    if not url.startswith("sqlite") or ":///" not in url:
        return None
    path = url.split(":///", 1)[1].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def hidden_paths(settings: Settings) -> list[Path]:
    """The bot's own files a command must not see: secrets, config file, SQLite database."""
    named = [settings.secrets_dir, settings.home / "config.yaml"]  # the default, even unread
    for config in (settings.source, os.environ.get("LARKBOT_CONFIG")):
        if config:
            named.append(Path(config))
    db = sqlite_file(settings.storage.url)
    if db is not None:
        named.append(db)
    out: list[Path] = []
    for path in named:
        plain = Path(os.path.abspath(path.expanduser()))
        real = Path(os.path.realpath(plain))
        out += [plain] if real == plain else [plain, real]  # a symlinked .secrets: both
    return out


def bwrap_argv(binary: str, settings: Settings) -> list[str]:
    """`bwrap` and its options, up to the `--` before the command."""
    # --cap-drop ALL: run as root, the command would keep every capability and could unmount
    # the masks (or mount the disk); unprivileged, bwrap already gives it none
    base = [binary, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--cap-drop", "ALL"]
    return [*base, *_hide(settings), "--"]


def _hide(settings: Settings) -> list[str]:
    secrets = Path(os.path.abspath(settings.secrets_dir.expanduser()))
    if secrets.parent.is_dir() and not secrets.exists():
        # empty and private: masked from now on, so a secret saved during a call is hidden too
        with contextlib.suppress(OSError):
            secrets.mkdir(mode=0o700)
    args: list[str] = []
    for path in hidden_paths(settings):
        args += _mask_named(Path(os.path.realpath(path.parent)), path.name)
    plugins = settings.home / "tools"  # code the bot itself loads, with its keys in reach
    if plugins.is_dir():
        args += ["--ro-bind", str(plugins), str(plugins)]
    return args


def _mask_named(directory: Path, name: str) -> list[str]:
    """Mask each entry of `directory` whose name starts with `name`: larkbot.db hides its
    -wal, -shm and -journal files and a .bak copy too; a directory gets an empty read-only
    tmpfs, a file /dev/null (neither can be removed or replaced from inside)."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    args: list[str] = []
    for entry in entries:
        if not entry.name.startswith(name):
            continue
        if entry.is_dir():
            args += ["--tmpfs", entry.path, "--remount-ro", entry.path]
        else:
            args += ["--ro-bind", "/dev/null", entry.path]
    return args
