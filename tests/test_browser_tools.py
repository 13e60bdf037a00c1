"""The browser tools against a local aiohttp site and the real (Debian) Chromium.

One Chromium serves the whole module (launching costs a second or two). Functional tests run
as an owner with `allow_private_networks` on, so the site on 127.0.0.1 is reachable; the SSRF
tests (tests/test_browser_ssrf.py) turn it off.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from larkbot.config import LiveSettings, parse_settings
from larkbot.config_sections import BrowserConfig
from larkbot.context import RequestContext
from larkbot.storage.db import Database
from tests.browser_site import Sites, site_connector, site_resolver, start_sites
from tools.base import BaseTool, ToolResult
from tools.browser.engine import BrowserEngine
from tools.builtin.browser_page import BrowserPageTool
from tools.builtin.browser_session import BrowserSessionTool
from tools.builtin.browser_tab import BrowserTabTool
from tools.builtin.web_fetch import WebFetchTool
from tools.runtime import ToolRuntime

pytestmark = pytest.mark.asyncio(loop_scope="module")
BROWSER_CONFIG: dict[str, BrowserConfig] = {}  # what the module engine reads; tests may narrow
REF = re.compile(r'(\w[\w ]*?) "([^"]*)"[^\n]*?\[ref=(s\d+(?:f\d+)?e\d+)\]')


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sites() -> AsyncIterator[Sites]:
    """The local test site (module-wide)."""
    running = await start_sites()
    yield running
    await running.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BrowserEngine]:
    """One engine (one Chromium) for the module, with the test DNS and dial seams."""
    BROWSER_CONFIG["browser"] = parse_settings({}).browser
    eng = BrowserEngine(lambda: BROWSER_CONFIG["browser"], site_resolver, site_connector)
    yield eng
    await eng.close()


def runtime(tmp: Path, engine: BrowserEngine, allow_private: bool) -> ToolRuntime:
    """A runtime whose settings allow (or not) private networks, sharing `engine`."""
    raw = {
        "storage": {"url": f"sqlite:///{tmp}/db.sqlite"},
        "tools": {"web_fetch": {"allow_private_networks": allow_private}},
    }
    settings = parse_settings(raw)
    rt = ToolRuntime("web", LiveSettings(settings), None, Database(settings.storage.url))  # type: ignore[arg-type]
    rt.services["browser"] = engine
    return rt


class Browser:
    """The three tools as one session's caller would use them."""

    def __init__(self, rt: ToolRuntime, engine: BrowserEngine, session: str) -> None:
        self.page = BrowserPageTool(rt, engine)
        self.tab = BrowserTabTool(rt, engine)
        self.session = BrowserSessionTool(rt, engine)
        self.ctx = RequestContext.local_owner(session, "web")

    async def call(self, tool: BaseTool, **args: Any) -> ToolResult:
        raw = await tool.invoke(self.ctx, args)
        return raw if isinstance(raw, ToolResult) else ToolResult(raw)

    async def do(self, action: str, **args: Any) -> str:
        result = await self.call(self.page, action=action, **args)
        assert not result.is_error, result.content
        return result.content


def ref_of(text: str, role: str, name: str) -> str:
    """The ref of the element with this role and accessible name in a rendered snapshot."""
    for found in REF.finditer(text):
        if found.group(1).strip().endswith(role) and found.group(2) == name:
            return found.group(3)
    raise AssertionError(f"no {role} {name!r} in:\n{text}")


@pytest.fixture
def browser(tmp_path: Path, engine: BrowserEngine, request: pytest.FixtureRequest) -> Browser:
    """An owner's session (private networks allowed) named after the test."""
    return Browser(runtime(tmp_path, engine, True), engine, request.node.name)


async def test_navigate_and_snapshot_show_the_page_with_refs(
    browser: Browser, sites: Sites
) -> None:
    text = await browser.do("navigate", url=sites.base + "/")
    assert f"Tab t1 of 1: {sites.base}/" in text
    assert "Title: Test shop" in text
    assert "<untrusted_web_content" in text  # page text is marked as untrusted
    assert ref_of(text, "button", "Place order").startswith("s")
    flat = await browser.do("snapshot", interactive_only=True)
    assert 'heading "Welcome' not in flat and 'button "Place order"' in flat


async def test_click_by_ref_changes_the_page(browser: Browser, sites: Sites) -> None:
    text = await browser.do("navigate", url=sites.base + "/")
    assert "No order yet" in text
    after = await browser.do(
        "click", ref=ref_of(text, "button", "Place order"), element="Place order button"
    )
    assert "Order placed: #4711" in after


async def test_type_into_a_form_and_submit(browser: Browser, sites: Sites) -> None:
    text = await browser.do("navigate", url=sites.base + "/")
    text = await browser.do("select", ref=ref_of(text, "combobox", "Colour"), values=["Blue"])
    text = await browser.do(
        "type", ref=ref_of(text, "textbox", "Search"), text="蓝色 shoes", submit=True
    )
    assert f"{sites.base}/result?q=" in text
    assert "Results for 蓝色 shoes in blue" in text


async def test_stale_ref_is_refused_after_navigation_and_after_a_new_snapshot(
    browser: Browser, sites: Sites
) -> None:
    first = await browser.do("navigate", url=sites.base + "/")
    old = ref_of(first, "button", "Place order")
    await browser.do("snapshot")  # a newer snapshot: the old one's refs are no longer accepted
    refused = await browser.call(browser.page, action="click", ref=old, element="Place order")
    assert refused.is_error and "Take a new snapshot" in refused.content
    fresh = ref_of(await browser.do("snapshot"), "button", "Place order")
    await browser.do("navigate", url=sites.base + "/second")
    refused = await browser.call(browser.page, action="click", ref=fresh, element="Place order")
    assert refused.is_error and "navigated" in refused.content
    assert "Page 2" in await browser.do("read_text")


async def test_tabs_open_switch_close_with_ids_never_reused(browser: Browser, sites: Sites) -> None:
    await browser.do("navigate", url=sites.base + "/")
    opened = await browser.call(browser.tab, action="open", url=sites.base + "/second")
    assert "new tab t2" in opened.content and "Page 2" in opened.content
    switched = await browser.call(browser.tab, action="switch", tab_id="t1")
    assert "Switched to t1" in switched.content and "Welcome to the test shop" in switched.content
    listed = (await browser.call(browser.tab, action="list")).content
    assert "* t1" in listed and "  t2" in listed
    await browser.call(browser.tab, action="close", tab_id="t2")
    reopened = await browser.call(browser.tab, action="open")
    assert "new tab t3" in reopened.content  # t2 is never given out again
    missing = await browser.call(browser.tab, action="switch", tab_id="t2")
    assert missing.is_error and "no tab 't2'" in missing.content


async def test_a_link_opening_a_new_tab_becomes_a_tab(browser: Browser, sites: Sites) -> None:
    text = await browser.do("navigate", url=sites.base + "/")
    after = await browser.do(
        "click", ref=ref_of(text, "link", "Second in a new tab"), element="link"
    )
    # the popup arrives on its own time: reported with this result or the next one
    seen = [after]  # every listing: a note may come with one listed just before the tab
    async with asyncio.timeout(30):
        while "t2  " not in seen[-1]:
            seen.append((await browser.call(browser.tab, action="list")).content)
            await asyncio.sleep(0.05)
    assert "opened a new tab t2" in "".join(seen)


async def test_dialogs_are_dismissed_and_reported(browser: Browser, sites: Sites) -> None:
    text = await browser.do("navigate", url=sites.base + "/")
    after = await browser.do("click", ref=ref_of(text, "button", "Show alert"), element="alert")
    assert "alert dialog was dismissed: 'hello from the page'" in after


async def test_js_rendered_text_the_browser_sees_and_web_fetch_does_not(
    browser: Browser, sites: Sites, tmp_path: Path
) -> None:
    rt = runtime(tmp_path, browser.page.engine, True)
    fetched = await WebFetchTool(rt).invoke(browser.ctx, {"url": sites.base + "/js"})
    assert "Loading" in str(fetched) and "JS-ONLY-TEXT-8842" not in str(fetched)
    await browser.do("navigate", url=sites.base + "/js")
    waited = await browser.do("wait", text="JS-ONLY-TEXT-8842", seconds=5)
    assert "JS-ONLY-TEXT-8842" in waited
    assert "JS-ONLY-TEXT-8842" in await browser.do("read_text")
    found = await browser.do("find", text="Rendered by")
    assert 'heading "Rendered by JavaScript"' in found


async def test_screenshot_is_an_image_attachment(browser: Browser, sites: Sites) -> None:
    await browser.do("navigate", url=sites.base + "/")
    result = await browser.call(browser.page, action="screenshot")
    assert not result.is_error and "sent to the user as an image" in result.content
    (shot,) = result.attachments
    assert shot.kind == "image" and shot.mime == "image/png"
    assert Path(shot.path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_session_status_and_stop_forget_the_context(browser: Browser, sites: Sites) -> None:
    await browser.do("navigate", url=sites.base + "/")
    status = await browser.call(browser.session, action="status")
    assert "Chromium 1" in status.content and f"t1  {sites.base}/" in status.content
    stopped = await browser.call(browser.session, action="stop")
    assert "closed" in stopped.content
    after = await browser.call(browser.session, action="status")
    assert "No browser is open" in after.content


async def test_sessions_have_separate_cookies(
    tmp_path: Path, engine: BrowserEngine, sites: Sites
) -> None:
    rt = runtime(tmp_path, engine, True)
    alice, bob = Browser(rt, engine, "cookies-a"), Browser(rt, engine, "cookies-b")
    await alice.do("navigate", url=sites.base + "/")
    await bob.do("navigate", url=sites.base + "/")
    a_page = engine.existing("cookies-a").tab().page  # type: ignore[union-attr]
    await a_page.context.add_cookies([{"name": "who", "value": "alice", "url": sites.base}])
    b_page = engine.existing("cookies-b").tab().page  # type: ignore[union-attr]
    assert await b_page.context.cookies() == []


async def test_idle_sessions_are_closed_and_tabs_are_bounded(
    tmp_path: Path, engine: BrowserEngine, sites: Sites
) -> None:
    b = Browser(runtime(tmp_path, engine, True), engine, "idle-and-bound")
    started = await b.call(b.session, action="start")
    assert "t1  about:blank" in started.content
    session = engine.existing("idle-and-bound")
    assert session is not None
    session.max_tabs = 2
    await b.call(b.tab, action="open")
    refused = await b.call(b.tab, action="open", url=sites.base + "/")
    assert refused.is_error and "max_tabs_per_session" in refused.content
    session.last_used -= 601  # browser.idle_seconds is 600
    await engine.reap()
    assert engine.existing("idle-and-bound") is None and engine.running  # others stay up


async def test_the_background_reaper_closes_an_idle_session_then_chromium(tmp_path: Path) -> None:
    config = parse_settings({"browser": {"idle_seconds": 0.5}}).browser
    own = BrowserEngine(lambda: config, site_resolver, site_connector)  # its own reaper's pace
    try:
        b = Browser(runtime(tmp_path, own, True), own, "left-idle")
        assert not (await b.call(b.session, action="start")).is_error
        assert own.existing("left-idle") is not None and own.running
        deadline = asyncio.get_running_loop().time() + 15
        while own.existing("left-idle") is not None or own.running:
            assert asyncio.get_running_loop().time() < deadline, "the idle session was kept"
            await asyncio.sleep(0.05)
        status = await b.call(b.session, action="status")
        assert status.content.startswith("No browser is open in this chat")
    finally:
        await own.close()


async def test_the_reaper_leaves_chromium_up_while_a_session_is_being_made() -> None:
    """Chromium launched for a session that is not made yet is not "unused": a launch slower
    than browser.idle_seconds let the reaper shut it down under new_context (seen on a loaded
    CI machine: 'Target page, context or browser has been closed')."""
    config = parse_settings({"browser": {"idle_seconds": 0.01}}).browser  # < any launch
    own = BrowserEngine(lambda: config, site_resolver, site_connector)
    try:
        making = asyncio.create_task(own.session("being-made"))
        deadline = asyncio.get_running_loop().time() + 30
        while not own.running:  # Chromium is up; the session's context is being made
            assert not making.done() and asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0)
        await own.reap()
        session = await asyncio.wait_for(making, 30)
        assert own.running and own.existing("being-made") is session
    finally:
        await own.close()


async def test_open_sessions_are_bounded_closing_the_least_recently_used(
    tmp_path: Path, engine: BrowserEngine
) -> None:
    for open_id in engine.sessions():  # start from no open context
        await engine.stop(open_id)
    default = BROWSER_CONFIG["browser"]
    BROWSER_CONFIG["browser"] = default.model_copy(update={"max_sessions": 2})
    try:
        rt = runtime(tmp_path, engine, True)
        a, b, c, d = (Browser(rt, engine, f"bound-{n}") for n in "abcd")
        for user in (a, b, c):
            assert not (await user.call(user.session, action="start")).is_error
        assert set(engine.sessions()) == {"bound-b", "bound-c"}  # a, the oldest, was closed
        busy_b, busy_c = engine.existing("bound-b"), engine.existing("bound-c")
        assert busy_b is not None and busy_c is not None
        async with busy_b.lock, busy_c.lock:  # both mid-call: none may be taken from them
            full = await d.call(d.session, action="start")
        assert full.is_error and "browser.max_sessions" in full.content
        assert set(engine.sessions()) == {"bound-b", "bound-c"}
    finally:
        BROWSER_CONFIG["browser"] = default


async def test_a_long_page_is_capped_with_a_truncation_marker(
    browser: Browser, sites: Sites
) -> None:
    text = await browser.do("navigate", url=sites.base + "/big")
    assert len(text) <= 8000 and "snapshot truncated: showing" in text
    assert 'button "Catalogue item number 0"' in text
    assert "Catalogue item number 599" not in text
    found = await browser.do("find", text="number 599")  # what the marker says to do
    assert 'button "Catalogue item number 599"' in found


async def test_service_workers_are_blocked(browser: Browser, sites: Sites) -> None:
    await browser.do("navigate", url=sites.base + "/sw")
    shown = await browser.do("wait", text="sw ", seconds=5)
    assert "sw blocked" in shown and "sw registered" not in shown
    assert sites.worker_fetches == []


async def test_upload_only_from_this_chats_inbox(
    home: Path, tmp_path: Path, engine: BrowserEngine, sites: Sites
) -> None:
    b = Browser(runtime(tmp_path, engine, True), engine, "upload")
    b.ctx = RequestContext("lark", "upload", sender_id="ou_owner", is_owner=True, chat_id="oc_up")
    sent = home / "inbox" / "oc_up" / "om_1" / "report.txt"
    sent.parent.mkdir(parents=True)
    sent.write_text("hello")
    (home / "inbox" / "oc_other").mkdir()
    (home / "inbox" / "oc_other" / "theirs.txt").write_text("not yours")
    text = await b.do("navigate", url=sites.base + "/")
    field = ref_of(text, "button", "Attachment")
    assert b.page.consent_always(action="upload", ref=field, paths=["om_1/report.txt"])
    for bad in ("/etc/passwd", "../oc_other/theirs.txt", str(home / "inbox" / "oc_other")):
        refused = await b.call(b.page, action="upload", ref=field, paths=[bad])
        assert refused.is_error and "not a file in this chat's inbox" in refused.content
    done = await b.do("upload", ref=field, paths=["om_1/report.txt"])
    assert "picked report.txt 5 bytes" in done
