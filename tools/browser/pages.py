"""Reading a tab for the model: guarded snapshots, refs resolved to locators, rendered results."""

from __future__ import annotations

import asyncio
import contextlib

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator

from tools.browser.engine import BrowserEngine, SnapshotOwner
from tools.browser.session import BrowserSession, Tab
from tools.browser.snapshot import Snapshot, cap_snapshot, interactive_only, parse_ref, tag_refs
from tools.browser.urls import BLANK, readable
from tools.web.extract import wrap_untrusted

SNAPSHOT_TIMEOUT_MS = 10_000
SETTLE_TIMEOUT_MS = 5_000


class PageError(Exception):
    """An action cannot be done; the message tells the model what to do instead."""


def stale(ref: str) -> PageError:
    """The error for a ref that is not from a tab's latest snapshot (Playwright MCP's advice)."""
    return PageError(
        f"Ref {ref} is not in the current page snapshot: the page navigated or a newer snapshot "
        "was taken since, and old refs may now name other elements. Take a new snapshot "
        "(browser_page action=snapshot) and use its refs."
    )


async def guard_readable(tab: Tab) -> None:
    """Refuse to read a tab showing anything but http(s) or about:blank (and blank it)."""
    if not readable(tab.page.url):
        with contextlib.suppress(PlaywrightError):
            await tab.page.goto(BLANK)
        raise PageError("this tab showed a page that is not http(s); it was closed to about:blank")


async def settle(tab: Tab) -> None:
    """Give a page a moment to finish what an action started (bounded; a slow page is fine)."""
    with contextlib.suppress(PlaywrightError):
        await tab.page.wait_for_load_state("domcontentloaded", timeout=SETTLE_TIMEOUT_MS)


async def take_snapshot(
    engine: BrowserEngine, session: BrowserSession, tab: Tab, depth: int | None = None
) -> Snapshot:
    """A new AI snapshot of the tab; it becomes the tab's only valid source of refs."""
    await guard_readable(tab)
    # both in one round trip's time: each call to the driver costs a hop through node
    raw, title = await asyncio.gather(
        tab.page.aria_snapshot(mode="ai", depth=depth, timeout=SNAPSHOT_TIMEOUT_MS), title_of(tab)
    )
    number = engine.new_snapshot_number()
    snap = tag_refs(raw, number, tab.page.url)
    snap.title = title
    tab.snapshot = snap
    owner = SnapshotOwner(session.session_id, tab.id, snap.url, snap.labels)
    engine.remember_snapshot(number, owner)
    return snap


def resolve_ref(engine: BrowserEngine, session: BrowserSession, ref: str) -> tuple[Tab, Locator]:
    """The tab and element a ref names, only if it is from a tab's latest snapshot."""
    parsed = parse_ref(ref or "")
    if parsed is None:
        raise PageError(f"{ref!r} is not a ref; refs look like s4e12 (from a snapshot)")
    number, raw = parsed
    owner = engine.snapshot_owner(number)
    if owner is None or owner.session_id != session.session_id:
        raise stale(ref)
    tab = session.tabs.get(owner.tab_id)
    if tab is None or tab.snapshot is None or tab.snapshot.number != number:
        raise stale(ref)
    session.current = tab.id
    return tab, tab.page.locator(f"aria-ref={raw}")


async def title_of(tab: Tab) -> str:
    """The page title, or '' while the page is busy."""
    try:
        return await tab.page.title()
    except PlaywrightError:
        return ""


async def render(
    session: BrowserSession,
    tab: Tab,
    snap: Snapshot,
    done: str = "",
    only_interactive: bool = False,
) -> str:
    """What the model reads: what happened, tab, url, notes, then the capped snapshot."""
    lines = [done] if done else []
    lines.append(f"Tab {tab.id} of {len(session.tabs)}: {tab.page.url}")
    lines += [f"Note: {n}" for n in session.take_notes()]
    body = interactive_only(snap.text) if only_interactive else snap.text
    page_text = f"Title: {snap.title}\n{cap_snapshot(body)}"
    lines.append(f"Snapshot s{snap.number} (act with its refs; older refs are refused):")
    lines.append(wrap_untrusted(page_text, tab.page.url))
    return "\n".join(lines)


def describe_owner(owner: SnapshotOwner | None, raw_ref: str) -> str:
    """`button "Save"` for a ref of a known snapshot, else the ref itself."""
    if owner is None:
        return raw_ref
    return owner.labels.get(raw_ref, raw_ref)
