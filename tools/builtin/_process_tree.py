"""Every process one shell call starts, found and killed when the call ends.

A shell call runs in its own session, with a marker in its environment, and — where the kernel
lets this process create one — in its own cgroup v2. When the call ends (normally, on timeout or
when cancelled) everything left is killed: the cgroup's members (`cgroup.kill`), which nothing
can leave, else a sweep of /proc for the session, the process group, the descendants and the
marker, so `setsid sleep 600 &` or a double fork does not outlive the call either.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

MARKER = "LARKBOT_SHELL_CALL"
_counter = itertools.count(1)
_cgroup_root: Path | bool | None = False  # False: not probed yet; None: unavailable


@dataclass
class Leftover:
    """A process still running when its call ended."""

    pid: int
    name: str


def cgroup_root() -> Path | None:
    """This process's own cgroup v2 directory if a child cgroup can be made in it, else None."""
    global _cgroup_root
    if _cgroup_root is not False:
        return _cgroup_root if isinstance(_cgroup_root, Path) else None
    _cgroup_root = None
    try:
        mount = next(
            line.split()[4]
            for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if " - cgroup2 " in line
        )
        own = next(
            line.split("::", 1)[1]
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.startswith("0::")
        )
        root = Path(mount) / own.strip().lstrip("/")
        probe = root / f"larkbot-probe-{os.getpid()}"
        probe.mkdir()
        probe.rmdir()
        _cgroup_root = root
    except (OSError, StopIteration, IndexError):
        pass
    return _cgroup_root if isinstance(_cgroup_root, Path) else None


@dataclass
class CallProcesses:
    """The processes of one call: a marker, a session led by the shell, maybe a cgroup."""

    use_cgroup: bool = True
    marker: str = field(default_factory=lambda: secrets.token_hex(8))
    cgroup: Path | None = None
    leader: int = 0

    def __post_init__(self) -> None:
        root = cgroup_root() if self.use_cgroup else None
        if root is not None:
            path = root / f"larkbot-shell-{os.getpid()}-{next(_counter)}"
            with contextlib.suppress(OSError):
                path.mkdir()
                self.cgroup = path

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """`base` plus the marker the sweep recognises the call's processes by."""
        return {**base, MARKER: self.marker}

    def argv(self, bash: str, command: str, wrapper: Sequence[str] = ()) -> list[str]:
        """Run `command` under `bash -c` (inside `wrapper`, e.g. the sandbox), first moving the
        process into the call's cgroup, so everything the wrapper starts is in it too."""
        inner = [*wrapper, bash, "-c", command]
        if self.cgroup is None:
            return inner
        join = 'echo $$ > "$1" 2>/dev/null; shift; exec "$@"'
        return [bash, "-c", join, "larkbot-shell", str(self.cgroup / "cgroup.procs"), *inner]

    def members(self) -> set[int]:
        """Every process of this call still alive (not counting zombies)."""
        found: set[int] = set()
        if self.cgroup is not None:
            with contextlib.suppress(OSError, ValueError):
                text = (self.cgroup / "cgroup.procs").read_text()
                found |= {int(p) for p in text.split()}
        found |= _sweep(self.leader, self.marker.encode())
        found.discard(os.getpid())
        return {p for p in found if _alive(p)}

    def kill(self) -> list[Leftover]:
        """SIGKILL everything of this call, repeating until nothing is left (forks included)."""
        killed: dict[int, Leftover] = {}
        for _ in range(20):
            pids = self.members()
            if not pids:
                break
            for pid in pids:
                killed.setdefault(pid, Leftover(pid, _name(pid)))
            if self.cgroup is not None:
                with contextlib.suppress(OSError):
                    (self.cgroup / "cgroup.kill").write_text("1")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.leader, signal.SIGKILL)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        return [k for pid, k in killed.items() if pid != self.leader]

    def close(self) -> None:
        """Remove the call's cgroup (it is empty once `kill` returned)."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _name(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:80] or "?"


def _sweep(leader: int, marker: bytes) -> set[int]:
    """Processes in the leader's session or group, its descendants, or carrying the marker."""
    if not leader:
        return set()
    parents: dict[int, int] = {}
    found: set[int] = set()
    needle = MARKER.encode() + b"=" + marker
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        fields = _stat(pid)
        if fields is None:
            continue
        ppid, pgid, sid = int(fields[1]), int(fields[2]), int(fields[3])
        parents[pid] = ppid
        if leader in (pgid, sid):
            found.add(pid)
            continue
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{pid}/environ").read_bytes():
                found.add(pid)
    for pid in list(parents):  # descendants of the shell, whatever their session
        seen, cur = 0, pid
        while cur in parents and seen < 64:
            if cur == leader or cur in found:
                found.add(pid)
                break
            cur, seen = parents[cur], seen + 1
    return found
