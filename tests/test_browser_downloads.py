"""Downloads: refused by default; when `browser.downloads` is on, kept, capped and sent as files."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from larkbot.config import parse_settings
from tests.browser_site import Sites, site_connector, site_resolver, start_sites
from tests.test_browser_tools import Browser, ref_of, runtime
from tools.base import Attachment, ToolResult
from tools.browser.engine import BrowserEngine

pytestmark = pytest.mark.asyncio(loop_scope="module")
DOWNLOADS_ON = parse_settings({"browser": {"downloads": True, "max_download_mb": 1}}).browser
DOWNLOADS_OFF = parse_settings({}).browser


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sites() -> AsyncIterator[Sites]:
    """The local test site (module-wide)."""
    running = await start_sites()
    yield running
    await running.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine() -> AsyncIterator[BrowserEngine]:
    """One Chromium; each session reads `config[0]` when its context is made."""
    eng = BrowserEngine(lambda: CONFIG[0], site_resolver, site_connector)
    yield eng
    await eng.close()


CONFIG = [DOWNLOADS_ON]


async def _until(b: Browser, first: ToolResult, seen: str) -> tuple[str, tuple[Attachment, ...]]:
    """Text and files of `first` and of short waits after it, until `seen` shows (bounded).

    The download event comes on the browser's own time: under load, after the click's result.
    """
    results = [first]
    async with asyncio.timeout(20):
        while seen not in "".join(r.content for r in results):
            results.append(await b.call(b.page, action="wait", seconds=0.2))
    assert not any(r.is_error for r in results), results
    return "".join(r.content for r in results), sum((r.attachments for r in results), ())


async def test_a_download_is_sent_to_the_user_and_deleted_with_the_session(
    tmp_path: Path, engine: BrowserEngine, sites: Sites
) -> None:
    CONFIG[0] = DOWNLOADS_ON
    b = Browser(runtime(tmp_path, engine, True), engine, "downloads-on")
    page = await b.do("navigate", url=sites.base + "/downloads")
    clicked = await b.call(b.page, action="click", ref=ref_of(page, "link", "Monthly report"))
    text, files = await _until(b, clicked, "it was sent to the user as a file")
    (sent,) = files
    saved = Path(sent.path)
    assert sent.kind == "file" and saved.read_bytes() == b"month,total\n2026-11,42\n"
    assert saved.name == "1-report.csv"  # the site's "../../" is not a path here
    session = engine.existing("downloads-on")
    assert session is not None and saved.parent == session.files
    assert "downloaded 1-report.csv (23 bytes); it was sent to the user as a file" in text

    page = await b.do("snapshot")
    big = await b.call(b.page, action="click", ref=ref_of(page, "link", "Big archive"))
    text, files = await _until(b, big, "over the 1 MB limit")
    assert not files and "2.0 MB, over the 1 MB limit (browser.max_download_mb)" in text
    assert sorted(p.name for p in session.files.iterdir()) == ["1-report.csv"]
    await b.call(b.session, action="stop")
    assert not saved.exists()  # the session's folder went with its context


async def test_downloads_are_refused_by_default(
    tmp_path: Path, engine: BrowserEngine, sites: Sites
) -> None:
    CONFIG[0] = DOWNLOADS_OFF
    b = Browser(runtime(tmp_path, engine, True), engine, "downloads-off")
    page = await b.do("navigate", url=sites.base + "/downloads")
    clicked = await b.call(b.page, action="click", ref=ref_of(page, "link", "Monthly report"))
    refused = "Note: a download was refused (downloads are off): 'report.csv'"
    _, files = await _until(b, clicked, refused)
    assert files == ()
    session = engine.existing("downloads-off")
    assert session is not None and session.downloads is None
    assert list(session.files.iterdir()) == []
