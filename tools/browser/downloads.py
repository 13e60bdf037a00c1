"""Downloads, when `browser.downloads` is on: kept in the session's folder, capped, sent as files.

A file the page downloads (through the same egress proxy as every request) is moved into the
session's folder, which is deleted with the context. One over `browser.max_download_mb` is
deleted and reported instead. Each kept file is attached to the next browser tool result, so
the user receives it as a file message (Lark) or an event (web); the model only reads its name.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from pathlib import Path

from playwright.async_api import Download
from playwright.async_api import Error as PlaywrightError

from tools.base import Attachment

SAVE_TIMEOUT_SECONDS = 120.0  # a download that has not finished by then is cancelled
MAX_KEPT = 20  # files per session folder; older downloads are not delivered twice anyway
_UNSAFE_NAME = re.compile(r"[^\w.\-]+")


def safe_name(suggested: str, number: int) -> str:
    """A file name without separators or leading dots (the site chose `suggested`)."""
    name = _UNSAFE_NAME.sub("_", Path(suggested).name).lstrip("._")[:100]
    return f"{number}-{name or 'download'}"


class Downloads:
    """The downloads of one session: saved in `folder`, each at most `max_bytes`."""

    def __init__(self, folder: Path, max_bytes: int, note: Callable[[str], None]) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.note = note  # the session's notes: reported with the next result
        self._ready: list[Attachment] = []
        self._saving: set[asyncio.Task[None]] = set()
        self._count = 0

    def start(self, download: Download) -> None:
        """Save `download` in the background (the page event cannot wait for it)."""
        self._count += 1
        task = asyncio.ensure_future(self._save(download, self._count))
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def _save(self, download: Download, number: int) -> None:
        name = safe_name(download.suggested_filename, number)
        try:
            done = await asyncio.wait_for(download.path(), SAVE_TIMEOUT_SECONDS)
        except (TimeoutError, PlaywrightError) as err:
            with contextlib.suppress(PlaywrightError):
                await download.cancel()
            self.note(f"the download {name!r} failed: {str(err).splitlines()[0][:200]}")
            return
        size = done.stat().st_size
        if size > self.max_bytes:
            await download.delete()
            limit = self.max_bytes / 2**20
            self.note(
                f"the download {name!r} was {size / 2**20:.1f} MB, over the "
                f"{limit:g} MB limit (browser.max_download_mb); it was deleted"
            )
            return
        if self._count > MAX_KEPT:
            await download.delete()
            self.note(f"the download {name!r} was deleted: {MAX_KEPT} per session at most")
            return
        target = self.folder / name
        await download.save_as(target)
        await download.delete()
        caption = f"downloaded from {download.url[:200]}"
        self._ready.append(Attachment(str(target), "file", caption=caption))
        self.note(f"downloaded {name} ({size:,} bytes); it was sent to the user as a file")

    async def settle(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds) for downloads in progress to be saved."""
        if self._saving:
            await asyncio.wait(set(self._saving), timeout=timeout)

    def take(self) -> tuple[Attachment, ...]:
        """The files saved since the last call, to deliver with the next result."""
        ready, self._ready = tuple(self._ready), []
        return ready

    def cancel(self) -> None:
        """Stop saving (the session is closing)."""
        for task in list(self._saving):
            task.cancel()
