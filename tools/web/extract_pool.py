"""HTML → text off the event loop, with a time budget that can actually stop the work.

Small pages are extracted in a worker thread. Large ones go to a warm child process; if
trafilatura takes longer than the budget the child is killed and the regex path runs instead
(in a fresh child, with its own budget); if even that is over budget, the page is unreadable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

from tools.web.extract import readable_text

REGEX_SECONDS = 5.0  # the linear fallback's own budget (it starts a fresh process)
IN_THREAD_BELOW = 200_000  # characters: below this, a thread is cheaper than the pipe
OVER_BUDGET = "(the page is too large or complex to extract in time)"


async def _frame(stream: asyncio.StreamReader) -> bytes:
    size = int.from_bytes(await stream.readexactly(8), "big")
    return await stream.readexactly(size)


class ExtractPool:
    """One warm extraction process, used by one request at a time."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def extract(self, html: str, url: str | None, budget: float) -> tuple[str, str, bool]:
        """(title, text, complete); complete is False when the fallback or nothing was used."""
        if len(html) < IN_THREAD_BELOW:
            title, text = await asyncio.to_thread(readable_text, html, url)
            return title, text, True
        async with self._lock:
            found = await self._ask("readable", html, url, budget)
            if found is not None:
                return found[0], found[1], True
            found = await self._ask("regex", html, url, max(budget, REGEX_SECONDS))
            if found is not None:
                return found[0], found[1], False
            return "", OVER_BUDGET, False

    async def _ask(
        self, mode: str, html: str, url: str | None, budget: float
    ) -> tuple[str, str] | None:
        try:
            async with asyncio.timeout(budget):
                proc = await self._start()
                assert proc.stdin is not None and proc.stdout is not None
                header = json.dumps({"mode": mode, "url": url}).encode()
                page = html.encode("utf-8", "replace")
                for data in (header, page):  # raw frames: see extract_worker
                    proc.stdin.write(len(data).to_bytes(8, "big"))
                    for i in range(0, len(data), 1 << 16):  # small writes: short loop steps
                        proc.stdin.write(data[i : i + (1 << 16)])
                        await proc.stdin.drain()
                title = await _frame(proc.stdout)
                text = await _frame(proc.stdout)
                return title.decode("utf-8", "replace"), text.decode("utf-8", "replace")
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError, KeyError):
            await self.aclose()  # over budget or broken: the next request gets a fresh one
            return None
        except asyncio.CancelledError:
            await asyncio.shield(self.aclose())
            raise

    async def _start(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tools.web.extract_worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=2**30,
            )
        return self._proc

    async def aclose(self) -> None:
        """Kill the worker (if any) and reap it."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 5)
