"""The process's browser: Playwright and one Chromium, started on first use, shared by sessions.

Each agent session gets its own `BrowserContext` (separate cookies, storage and proxy),
closed after `browser.idle_seconds` unused; at most `browser.max_sessions` are open (the least
recently used idle one is closed to make room). Chromium itself is closed when no session has
used it for `idle_seconds`, and started again on the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Browser, Playwright, async_playwright

from larkbot.config_sections import BrowserConfig
from larkbot.logs import get_logger
from tools.browser.launch import launch_options
from tools.browser.proxy import Connector, EgressProxy, open_tcp
from tools.browser.session import BrowserSession
from tools.web.ssrf import Resolver, system_resolver

log = get_logger(__name__)

VIEWPORT = {"width": 1280, "height": 800}
ACTION_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class SnapshotOwner:
    """Whose snapshot a number is: the consent hooks look refs up here (they get no context)."""

    session_id: str
    tab_id: str
    url: str
    labels: dict[str, str]


class SessionsFull(Exception):
    """Every allowed browser session is busy."""


class BrowserEngine:
    """Starts the browser lazily and hands out per-session contexts."""

    def __init__(
        self,
        config: Callable[[], BrowserConfig],
        resolver: Resolver = system_resolver,
        connector: Connector = open_tcp,
    ) -> None:
        self._config = config
        self._resolver = resolver
        self._connector = connector
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._default_proxy: EgressProxy | None = None
        self._sessions: dict[str, BrowserSession] = {}
        self._start_lock = asyncio.Lock()
        self._create_lock = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None
        self._last_used = time.monotonic()
        self._opening = 0  # session() calls in progress
        self._snapshot_number = 0
        self._owners: OrderedDict[int, SnapshotOwner] = OrderedDict()
        self.launch_seconds = 0.0

    @property
    def running(self) -> bool:
        """True while Chromium is up."""
        return self._browser is not None and self._browser.is_connected()

    @property
    def version(self) -> str:
        """Chromium's version ('' when not running)."""
        return self._browser.version if self._browser is not None else ""

    def sessions(self) -> dict[str, BrowserSession]:
        """The open sessions by session id."""
        return dict(self._sessions)

    async def _ensure_browser(self) -> Browser:
        async with self._start_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            await self._shutdown_browser()
            started = time.perf_counter()
            self._default_proxy = EgressProxy(deny_all=True)  # traffic outside any context
            proxy_url = await self._default_proxy.start()
            self._playwright = await async_playwright().start()
            try:
                options = launch_options(self._config(), proxy_url)
                self._browser = await self._playwright.chromium.launch(**options)
            except BaseException:
                await self._shutdown_browser()
                raise
            self.launch_seconds = time.perf_counter() - started
            log.info("browser_started", version=self._browser.version, seconds=self.launch_seconds)
            if self._reaper is None or self._reaper.done():
                self._reaper = asyncio.create_task(self._reap_forever())
            return self._browser

    async def session(self, session_id: str) -> BrowserSession:
        """This session's browser (created, with Chromium if needed)."""
        self._last_used = time.monotonic()
        self._opening += 1  # the reaper must not close Chromium under a session being made
        try:
            return await self._session(session_id)
        finally:
            self._opening -= 1
            self._last_used = time.monotonic()

    async def _session(self, session_id: str) -> BrowserSession:
        existing = self._sessions.get(session_id)
        if existing is not None and self.running:
            existing.touch()
            return existing
        if existing is not None:  # Chromium went away under it
            await self.stop(session_id)
        browser = await self._ensure_browser()
        async with self._create_lock:
            created = self._sessions.get(session_id)  # another call may have won the race
            if created is not None:
                return created
            await self._make_room()
            cfg = self._config()
            proxy = EgressProxy(self._resolver, self._connector)
            context = await browser.new_context(
                viewport=VIEWPORT,  # type: ignore[arg-type]
                accept_downloads=cfg.downloads,
                service_workers="block",  # a service worker's fetches would skip page checks
                locale="zh-CN",
                proxy={"server": await proxy.start()},
            )
            context.set_default_timeout(ACTION_TIMEOUT_MS)
            files = Path(tempfile.mkdtemp(prefix="larkbot-browser-"))
            keep = int(cfg.max_download_mb * 2**20) if cfg.downloads else 0
            session = BrowserSession(
                session_id, context, proxy, cfg.max_tabs_per_session, files, keep
            )
            self._sessions[session_id] = session
        log.info("browser_session_opened", session=session_id, open=len(self._sessions))
        return session

    async def _make_room(self) -> None:
        limit = self._config().max_sessions
        while len(self._sessions) >= limit:
            idle = [s for s in self._sessions.values() if not s.lock.locked()]
            if not idle:
                raise SessionsFull(
                    f"all {limit} browser sessions (browser.max_sessions) are busy; try again soon"
                )
            oldest = min(idle, key=lambda s: s.last_used)
            log.info("browser_session_evicted", session=oldest.session_id)
            await self.stop(oldest.session_id)

    def existing(self, session_id: str) -> BrowserSession | None:
        """This session's browser if it is open (never starts one)."""
        return self._sessions.get(session_id)

    async def stop(self, session_id: str) -> bool:
        """Close this session's context; False when it had none."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        try:
            await session.close()
        except Exception:  # Chromium already gone: the context went with it
            log.debug("browser_session_close_failed", session=session_id, exc_info=True)
        log.info("browser_session_closed", session=session_id)
        return True

    def new_snapshot_number(self) -> int:
        """A number no other snapshot in this process has (refs name their snapshot)."""
        self._snapshot_number += 1
        return self._snapshot_number

    def remember_snapshot(self, number: int, owner: SnapshotOwner) -> None:
        """Record whose snapshot `number` is (the most recent 2,000 are kept)."""
        self._owners[number] = owner
        while len(self._owners) > 2000:
            self._owners.popitem(last=False)

    def snapshot_owner(self, number: int) -> SnapshotOwner | None:
        """Whose snapshot `number` is, if it is recent."""
        return self._owners.get(number)

    async def reap(self) -> None:
        """Close sessions idle for longer than `browser.idle_seconds`, then an unused Chromium."""
        idle_seconds = self._config().idle_seconds
        now = time.monotonic()
        for session in list(self._sessions.values()):
            if not session.lock.locked() and now - session.last_used > idle_seconds:
                await self.stop(session.session_id)
        unused = now - self._last_used > idle_seconds
        if not self._sessions and not self._opening and self._browser is not None and unused:
            async with self._start_lock:
                await self._shutdown_browser()

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(min(30.0, max(self._config().idle_seconds / 4, 0.05)))
            try:
                await self.reap()
            except Exception:
                log.warning("browser_reap_failed", exc_info=True)

    async def _shutdown_browser(self) -> None:
        browser, self._browser = self._browser, None
        pw, self._playwright = self._playwright, None
        proxy, self._default_proxy = self._default_proxy, None
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()
            log.info("browser_stopped")
        if pw is not None:
            with contextlib.suppress(Exception):
                await pw.stop()
        if proxy is not None:
            await proxy.close()

    async def close(self) -> None:
        """Close every session and the browser (idempotent; the tools call it on shutdown)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for session_id in list(self._sessions):
            await self.stop(session_id)
        async with self._start_lock:
            await self._shutdown_browser()
