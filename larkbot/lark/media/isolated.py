"""Reading files people send in a child process that cannot sink the server.

A document's text (`extract_text`) and an image's preparation (`prepare_image`) run in a fresh
`python -m larkbot.lark.media.isolated_child` per file: its address space is capped at MEMORY_BUDGET
over what its libraries take (RLIMIT_AS, set in the child), and it is killed when it runs past
its timeout (its CPU time is capped too, should the server itself die first); it runs at a lower
CPU priority (nice 10), so on a busy machine webhooks come first. The event loop
only writes the job and reads the answer, so `/healthz` and other turns are not held up; at
most SLOTS children run at once. A fresh process per file costs ~0.1-0.3 s and gives all of its
memory back when it exits. It limits resources, not privileges: the child runs as the server's
user, though without its environment (and so without its keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from larkbot.lark.media.extract import ExtractError
from larkbot.lark.media.images import MediaError
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.media.isolated")
MEMORY_BUDGET = 256 * 1024 * 1024
EXTRACT_SECONDS = 30.0  # a pathological document must not hold the turn
IMAGE_SECONDS = 20.0
SLOTS = 2  # children at once: each may take MEMORY_BUDGET
CHILD = f"{__package__}.isolated_child"
# The child gets only what running Python needs, not the server's secrets (LLM and Lark keys).
PASSED = ("PATH", "PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "TMPDIR")
# numpy (imported by openpyxl) would start a BLAS thread per core, each mapping its own
# buffers out of the child's small address space
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def child_env() -> dict[str, str]:
    """The child's environment: PASSED from ours, one BLAS thread."""
    return {**{k: v for k, v in os.environ.items() if k in PASSED}, **ONE_THREAD}


@dataclass(frozen=True)
class JobStats:
    """What one child took: resident bytes after its imports and at its peak, wall time."""

    kind: str
    base_bytes: int
    peak_bytes: int
    seconds: float
    outcome: str  # ok | error | timeout | crashed


class Sandbox:
    """Runs extraction and image jobs in memory-capped, killable child processes."""

    def __init__(self, memory: int = MEMORY_BUDGET, slots: int = SLOTS) -> None:
        self.memory = memory
        self.last: JobStats | None = None  # the latest job's figures (logs, tests)
        self._gate = asyncio.Semaphore(slots)

    async def extract(
        self, path: Path, limit: int, seconds: float | None, timeout: float = EXTRACT_SECONDS
    ) -> str:
        """The document's text (see `extract_text`); ExtractError says why when it is not."""
        job = {"kind": "extract", "path": str(path), "limit": limit, "seconds": seconds}
        ok, value = await self._run(job, timeout)
        if not ok:
            raise ExtractError(value)
        return str(value)

    async def image(self, src: Path, dest: Path, timeout: float = IMAGE_SECONDS) -> Path:
        """The checked, downscaled image (see `prepare_image`); MediaError says why not."""
        ok, value = await self._run({"kind": "image", "path": str(src), "dest": str(dest)}, timeout)
        if not ok:
            raise MediaError(value)
        return Path(value)

    async def _run(self, job: dict[str, Any], timeout: float) -> tuple[bool, Any]:
        async with self._gate:
            started = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                CHILD,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=child_env(),
            )
            try:
                async with asyncio.timeout(timeout):
                    out, err = await proc.communicate(
                        json.dumps({**job, "memory": self.memory, "cpu": timeout}).encode()
                    )
            except TimeoutError:
                self._note(job, {}, started, "timeout")
                return False, f"reading it took longer than {timeout:g} s, so it was stopped"
            finally:
                if proc.returncode is None:  # timed out or cancelled: the child must die
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    await asyncio.shield(proc.wait())
        try:
            reply = json.loads(out)
        except ValueError:
            log.warning(
                "sandbox_crashed",
                code=proc.returncode,
                stderr=err[-500:].decode("utf-8", "replace"),
            )
            self._note(job, {}, started, "crashed")
            megabytes = self.memory // (1024 * 1024)
            return False, f"the reader stopped (it may need more than {megabytes} MB of memory)"
        ok = "ok" in reply
        self._note(job, reply, started, "ok" if ok else "error")
        return ok, reply["ok"] if ok else str(reply.get("error"))

    def _note(
        self, job: dict[str, Any], reply: dict[str, Any], started: float, outcome: str
    ) -> None:
        stats = JobStats(
            job["kind"],
            int(reply.get("base", 0)),
            int(reply.get("peak", 0)),
            time.monotonic() - started,
            outcome,
        )
        self.last = stats
        log.info(
            "sandbox_job",
            kind=stats.kind,
            outcome=outcome,
            seconds=round(stats.seconds, 2),
            peak_mb=stats.peak_bytes >> 20,
            growth_mb=max(stats.peak_bytes - stats.base_bytes, 0) >> 20,
        )
