"""A local PostgreSQL server on a core of its own during a measurement, as on a host of its own.

Linux only (`/proc`, `sched_setaffinity`). A socket write wakes its reader on the writer's CPU (a
"sync" wake-up: the writer is expected to sleep), so on a 2-core machine the backend committing
the webhook's claims runs on the event loop's core and preempts it at every commit, while the
other core idles (`bench/preemptions.py` counts it). That measures where the kernel put the
database, not the server under test: a database shared by replicas runs on a host of its own.
`own_core` gives the server's processes the last CPU and the loop's thread the others, for the
run, and puts both back afterwards; where that cannot be done it says why and changes nothing.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (which may hold spaces)."""
    text = (PROC / str(pid) / "stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def _is_postgres(pid: int) -> bool:
    try:
        return (PROC / str(pid) / "comm").read_text().strip().startswith("postgres")
    except OSError:
        return False


def _server(postmaster: int) -> list[int]:
    """The postmaster and every process it started (backends, WAL writer…), now."""
    children = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(_stat_fields(int(entry.name))[1]) == postmaster:
                    children.append(int(entry.name))
    return [postmaster, *children]


async def local_postmaster(url: str) -> int | None:
    """The pid of the postmaster serving `url` when it runs on this machine, else None."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        backend = int(await conn.fetchval("SELECT pg_backend_pid()"))
        if not _is_postgres(backend):  # a server elsewhere: that pid means nothing here
            return None
        postmaster = int(_stat_fields(backend)[1])  # asked while the backend still runs
    finally:
        await conn.close()
    return postmaster if _is_postgres(postmaster) else None


def _set(pid: int, cpus: set[int]) -> None:
    with contextlib.suppress(ProcessLookupError):  # a backend that ended meanwhile
        os.sched_setaffinity(pid, cpus)


@contextlib.contextmanager
def own_core(postmaster: int | None) -> Iterator[str]:
    """The server's processes on the last CPU, the calling thread on the others; yields where
    each runs (or why both still share every CPU), and restores both afterwards."""
    loop_thread = threading.get_native_id()
    ours = sorted(os.sched_getaffinity(loop_thread))
    if postmaster is None:
        yield "PostgreSQL runs elsewhere: placement unchanged"
        return
    if len(ours) < 2:
        yield "one CPU only: PostgreSQL shares it"
        return
    theirs = os.sched_getaffinity(postmaster)
    try:
        for pid in _server(postmaster):  # backends started later inherit the postmaster's CPU
            _set(pid, {ours[-1]})
    except PermissionError as err:  # not root, nor the server's user: undo what was moved
        for pid in _server(postmaster):
            with contextlib.suppress(PermissionError):
                _set(pid, theirs)
        yield f"PostgreSQL could not be moved ({err.strerror}): placement unchanged"
        return
    os.sched_setaffinity(loop_thread, set(ours[:-1]))
    try:
        cpus = ",".join(map(str, ours[:-1]))
        yield f"PostgreSQL's processes on CPU {ours[-1]}, this event loop's thread on CPU {cpus}"
    finally:
        os.sched_setaffinity(loop_thread, set(ours))
        for pid in _server(postmaster):
            _set(pid, theirs)
