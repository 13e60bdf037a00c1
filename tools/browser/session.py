"""One agent session's browser: its context (cookies, storage), tabs, proxy and notes.

Tabs get ids `t1, t2, …` in order and an id is never reused, so a closed tab's id cannot
silently name another page. Popups a page opens become tabs too (up to the bound; beyond it
they are closed). Dialogs are dismissed (beforeunload accepted, so navigation goes on), file
choosers refused, downloads refused unless `browser.downloads` (then `downloads.py` keeps
them); each becomes a note the next tool result reports.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, Dialog, Download, FileChooser, Frame, Page

from tools.browser.downloads import Downloads
from tools.browser.proxy import EgressProxy
from tools.browser.snapshot import Snapshot


class TabLimit(Exception):
    """The session already has `browser.max_tabs_per_session` tabs."""


@dataclass
class Tab:
    """One page and the latest snapshot taken of it (None after a navigation)."""

    id: str
    page: Page
    snapshot: Snapshot | None = None


class BrowserSession:
    """The browser state of one agent session; `lock` serialises its tool calls."""

    def __init__(
        self,
        session_id: str,
        context: BrowserContext,
        proxy: EgressProxy,
        max_tabs: int,
        files: Path,
        max_download_bytes: int = 0,
    ) -> None:
        self.session_id = session_id
        self.context = context
        self.proxy = proxy
        self.max_tabs = max_tabs
        self.files = files  # screenshots; deleted with the session
        self.tabs: dict[str, Tab] = {}
        self.current = ""
        self.lock = asyncio.Lock()
        self.last_used = time.monotonic()
        self._next_id = 1
        self._notes: deque[str] = deque(maxlen=20)
        self._pending: set[asyncio.Task[None]] = set()
        self.upload_root: Path | None = None  # this chat's inbox, set at every tool call
        self._opening = 0  # our own new_page() calls: their "page" events are not popups
        # 0: downloads are off (the context refuses them); else each is kept up to this size
        self.downloads = (
            Downloads(files, max_download_bytes, self.note) if max_download_bytes else None
        )
        context.on("page", self._adopt)

    @property
    def allow_private(self) -> bool:
        """Whether this session's pages may reach private networks (the proxy reads it)."""
        return self.proxy.allow_private

    @allow_private.setter
    def allow_private(self, value: bool) -> None:
        self.proxy.allow_private = value

    def touch(self) -> None:
        """Mark the session used now (the idle timer restarts)."""
        self.last_used = time.monotonic()

    def note(self, text: str) -> None:
        """Something the page did on its own, reported with the next result."""
        self._notes.append(text)

    def take_notes(self) -> list[str]:
        """Notes since the last result, including requests the proxy refused."""
        notes = list(self._notes)
        self._notes.clear()
        notes += [f"blocked request: {b}" for b in self.proxy.take_blocked()]
        return notes

    def tab(self, tab_id: str = "") -> Tab | None:
        """The tab `tab_id`, or the current one."""
        return self.tabs.get(tab_id or self.current)

    def _register(self, page: Page) -> Tab:
        for tab in self.tabs.values():
            if tab.page is page:
                return tab
        tab = Tab(f"t{self._next_id}", page)
        self._next_id += 1
        self.tabs[tab.id] = tab

        def navigated(frame: Frame) -> None:
            if frame == page.main_frame:
                tab.snapshot = None  # the old refs may now name other elements

        page.on("framenavigated", navigated)
        page.on("dialog", self._dialog)
        page.on("filechooser", self._file_chooser)
        page.on("download", self._download)
        page.on("close", lambda _: self._closed(tab.id))
        return tab

    def _adopt(self, page: Page) -> None:
        """A page the site opened (window.open, target=_blank) becomes a tab, within the bound."""
        if any(t.page is page for t in self.tabs.values()):
            return
        if self._opening:
            self._register(page)
            return
        if len(self.tabs) >= self.max_tabs:
            self.note("a popup was closed: the session already has the most tabs allowed")
            self._spawn(page.close())
            return
        tab = self._register(page)
        self.note(f"the page opened a new tab {tab.id} (switch to it with browser_tab)")

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _closed(self, tab_id: str) -> None:
        self.tabs.pop(tab_id, None)
        if self.current == tab_id:
            self.current = next(reversed(self.tabs), "") if self.tabs else ""

    async def _dialog(self, dialog: Dialog) -> None:
        text = dialog.message[:300]
        if dialog.type == "beforeunload":
            await dialog.accept()
            self.note("a 'leave this page?' dialog was accepted")
            return
        await dialog.dismiss()
        self.note(f"a {dialog.type} dialog was dismissed: {text!r}")

    def _file_chooser(self, chooser: FileChooser) -> None:
        self.note("the page opened a file chooser; use action=upload with the file input's ref")

    def _download(self, download: Download) -> None:
        if self.downloads is not None:
            self.downloads.start(download)
            return
        self.note(f"a download was refused (downloads are off): {download.suggested_filename!r}")
        self._spawn(download.cancel())

    async def open_tab(self, url: str = "") -> Tab:
        """A new tab (made current); TabLimit when the bound is reached."""
        if len(self.tabs) >= self.max_tabs:
            raise TabLimit(
                f"this session already has {len(self.tabs)} tabs "
                "(browser.max_tabs_per_session); close one with browser_tab action=close"
            )
        self._opening += 1
        try:
            page = await self.context.new_page()
        finally:
            self._opening -= 1
        tab = self._register(page)
        self.current = tab.id
        return tab

    async def close_tab(self, tab_id: str) -> None:
        """Close one tab (its id is never given out again)."""
        tab = self.tabs.get(tab_id)
        if tab is not None:
            await tab.page.close()
            self._closed(tab_id)

    async def close(self) -> None:
        """Close the context (cookies and storage go with it), the proxy and the files."""
        try:
            await self.context.close()
        finally:
            await self.proxy.close()
            for task in list(self._pending):
                task.cancel()
            if self.downloads is not None:
                self.downloads.cancel()
            shutil.rmtree(self.files, ignore_errors=True)
