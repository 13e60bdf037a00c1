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
    """The process cannot start; the message says why and what to do (shown without traceback)."""


def _writable_dir(path: Path) -> str | None:
    """None when files can be created in `path` (made if missing), else the OS's reason."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".larkbot-probe-"):
            pass
    except OSError as err:
        return err.strerror or type(err).__name__
    return None


def _owner_hint(path: Path) -> str:
    uid = os.getuid() if hasattr(os, "getuid") else None
    who = f"uid {uid}" if uid is not None else "this user"
    return (
        f"make it writable for {who}: `sudo chown -R {uid}:{uid} <host folder>` for a "
        "folder mounted at /data (the image runs as uid 10001), or `docker run --user "
        "$(id -u):$(id -g)`, or point LARKBOT_HOME / storage.url elsewhere"
        if uid is not None
        else f"make {path} writable, or point LARKBOT_HOME elsewhere"
    )


def check_writable(settings: Settings) -> None:
    """LARKBOT_HOME, and the SQLite database's folder, must accept new files."""
    folders = [settings.home]
    if settings.storage.url.startswith("sqlite:///"):
        folders.append(Path(settings.storage.url.removeprefix("sqlite:///")).parent)
    for folder in dict.fromkeys(folders):
        reason = _writable_dir(folder)
        if reason is not None:
            raise StartupError(
                f"cannot write to {folder} ({reason}).\n"
                f"  larkbot keeps its database, knowledge and secrets there.\n"
                f"  Fix: {_owner_hint(folder)}."
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
    return StartupError(f"{cause}.\n  Fix: {fix}.")


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
