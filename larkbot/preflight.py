"""Start-up checks whose failure is one screen naming the cause and the fix, not a traceback."""

from __future__ import annotations

import errno
import os
import socket
import tempfile
from pathlib import Path

from larkbot.config import Settings
from larkbot.errors import LarkBotError


class StartupError(LarkBotError):
    """The process cannot start: the problem and the fix, one screen without a traceback."""

    def __init__(self, problem: str, fix: str, why: str = "") -> None:
        # kept apart for the doctor's report line; the message is the screen `serve` prints
        self.problem, self.fix = problem, fix
        super().__init__("\n  ".join([f"{problem}.", *([why] if why else []), f"Fix: {fix}."]))


def _writable_dir(path: Path) -> OSError | None:
    """None when files can be created in `path` (made if missing), else the OS's error."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".larkbot-probe-"):
            pass
    except OSError as err:
        return err
    return None


def in_container(root: Path = Path("/")) -> bool:
    """True inside Docker (or another container runtime): /.dockerenv, or PID 1's cgroup."""
    if (root / ".dockerenv").exists() or (root / "run/.containerenv").exists():
        return True
    try:
        cgroup = (root / "proc/1/cgroup").read_text(errors="replace")
    except OSError:
        return False
    return any(word in cgroup for word in ("docker", "containerd", "kubepods", "libpod"))


def home_remedy(path: Path, err: OSError, container: bool, uid: int | None) -> str:
    """The fix for a folder that takes no files, for where larkbot runs (container or not)."""
    elsewhere = "or point LARKBOT_HOME (or storage.url) at a writable folder"
    if err.errno == errno.EROFS:
        if container:
            return (
                f"{path} is read-only in this container: drop `:ro` from the volume mounted "
                f"there (`-v ./data:/data`, not `./data:/data:ro`), mount a writable volume "
                f"there (needed with compose's `read_only: true`), {elsewhere}"
            )
        return f"{path} is on a read-only file system: {elsewhere}, e.g. LARKBOT_HOME=~/.larkbot"
    if container:
        n = uid if uid is not None else 10001  # the image's user
        return (
            f"make the host folder mounted at {path} writable for uid {n}: on the host, "
            f"`sudo chown -R {n}:{n} <host folder>` (the image runs as uid 10001), or "
            f"`docker run --user $(id -u):$(id -g)`, {elsewhere}"
        )
    if err.errno in (errno.EACCES, errno.EPERM):
        return f"make {path} yours: `sudo chown -R $(id -un) {path}`, {elsewhere}"
    return f"make {path} a writable folder, {elsewhere}"


def check_writable(settings: Settings) -> None:
    """LARKBOT_HOME, and the SQLite database's folder, must accept new files."""
    folders = [settings.home]
    if settings.storage.url.startswith("sqlite:///"):
        folders.append(Path(settings.storage.url.removeprefix("sqlite:///")).parent)
    uid = os.getuid() if hasattr(os, "getuid") else None
    for folder in dict.fromkeys(folders):
        err = _writable_dir(folder)
        if err is not None:
            remedy = home_remedy(folder, err, in_container(), uid)
            raise StartupError(
                f"cannot write to {folder} ({err.strerror or type(err).__name__})",
                remedy,
                "larkbot keeps its database, knowledge and secrets there.",
            )


def port_error(host: str, port: int, err: OSError) -> StartupError:
    """The one-screen error for a listening socket that could not be opened."""
    if err.errno == errno.EADDRINUSE:
        cause = f"port {port} on {host} is already in use (another larkbot, or another server)"
        fix = (
            f"stop the other process (`ss -ltnp 'sport = :{port}'` shows it), or choose "
            "another port: LARKBOT_PORT=8081 or server.port"
        )
    elif err.errno == errno.EACCES:
        cause = f"not allowed to listen on port {port} (ports below 1024 need root)"
        fix = "use a port of 1024 or more: LARKBOT_PORT=8080 or server.port"
    elif err.errno == errno.EADDRNOTAVAIL or isinstance(err, socket.gaierror):
        cause = f"{host} is not an address of this machine"
        fix = "use 0.0.0.0 (all addresses) or 127.0.0.1: LARKBOT_HOST or server.host"
    else:
        cause = f"cannot listen on {host}:{port}: {err.strerror or err}"
        fix = "check server.host and server.port (LARKBOT_HOST / LARKBOT_PORT)"
    return StartupError(cause, fix)


def check_port(host: str, port: int) -> None:
    """Fail before anything starts when `host:port` cannot be bound (it is bound again later)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
        try:
            probe.bind((host, port))
        except OSError as err:
            raise port_error(host, port, err) from None
