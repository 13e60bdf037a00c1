"""bench/placement.py: a local PostgreSQL server on a core of its own, and put back afterwards.

Runs against the throwaway cluster `make test` starts (the `pg_url` fixture), as root in CI.
"""

from __future__ import annotations

import os
import threading

import asyncpg

from bench.placement import local_postmaster, own_core

can_move_the_server = os.geteuid() == 0 and len(os.sched_getaffinity(0)) >= 2


async def _backend_cpus(url: str) -> set[int]:
    conn = await asyncpg.connect(url)
    try:
        return os.sched_getaffinity(int(await conn.fetchval("SELECT pg_backend_pid()")))
    finally:
        await conn.close()


async def test_the_server_gets_the_last_cpu_the_loop_the_others_then_both_are_put_back(
    pg_url: str,
) -> None:
    postmaster = await local_postmaster(pg_url)
    assert postmaster is not None
    with open(f"/proc/{postmaster}/comm") as comm:
        assert comm.read().strip() == "postgres"
    loop_thread = threading.get_native_id()
    ours, theirs = os.sched_getaffinity(loop_thread), os.sched_getaffinity(postmaster)
    last = max(ours)
    with own_core(postmaster) as placement:
        if not can_move_the_server:  # the server runs as `postgres`: only root may move it
            assert "placement unchanged" in placement or "one CPU only" in placement
            return
        assert placement.startswith(f"PostgreSQL's processes on CPU {last}")
        assert os.sched_getaffinity(postmaster) == {last}
        assert os.sched_getaffinity(loop_thread) == ours - {last}
        assert await _backend_cpus(pg_url) == {last}  # a backend started now inherits it
    assert os.sched_getaffinity(postmaster) == theirs
    assert os.sched_getaffinity(loop_thread) == ours
    assert await _backend_cpus(pg_url) == theirs


def test_a_server_elsewhere_is_left_where_it_is() -> None:
    cpus = os.sched_getaffinity(0)
    with own_core(None) as placement:
        assert placement == "PostgreSQL runs elsewhere: placement unchanged"
        assert os.sched_getaffinity(0) == cpus
