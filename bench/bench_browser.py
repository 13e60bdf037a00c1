"""Browser figures: launch, new context, snapshot and click latency and memory per context,
through the browser tools (egress proxy, ref tagging, rendering) vs Playwright driving the same
Chromium directly (the baseline), in the same run, against the local test site.

Launch includes starting Playwright's driver on both sides. A click is followed by a fresh
snapshot on both sides, since our click returns one. Memory is the PSS of the browser
processes added per open context (one page loaded in each).
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import async_playwright

from larkbot.config import LiveSettings, parse_settings
from larkbot.context import RequestContext
from tests.browser_site import Sites, start_sites
from tools.browser.engine import BrowserEngine
from tools.browser.launch import LAUNCH_ARGS, find_executable, sandboxed
from tools.browser.memory import browser_pss_bytes
from tools.builtin.browser_page import BrowserPageTool
from tools.runtime import ToolRuntime

ROUNDS = 15
CONTEXTS = 4
Timed = Callable[[], Awaitable[Any]]


def _button_ref(snapshot: str) -> str:
    """The ref of the "Place order" button (after a click it is also [active])."""
    found = re.search(r'button "Place order"[^\n]*\[ref=(\w+)\]', snapshot)
    assert found, snapshot
    return found.group(1)


async def _median_ms(step: Timed, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await step()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def _ours(sites: Sites) -> dict[str, float]:
    settings = parse_settings({"tools": {"web_fetch": {"allow_private_networks": True}}})
    rt = ToolRuntime("web", LiveSettings(settings), None, None)  # type: ignore[arg-type]
    engine = BrowserEngine(lambda: settings.browser)
    rt.services["browser"] = engine
    tool = BrowserPageTool(rt, engine)
    figures: dict[str, float] = {}
    try:
        started = time.perf_counter()
        await engine._ensure_browser()
        figures["launch"] = (time.perf_counter() - started) * 1000
        base = browser_pss_bytes()
        started = time.perf_counter()
        for i in range(CONTEXTS):
            ctx = RequestContext.local_owner(f"bench-{i}", "web")
            await tool.invoke(ctx, {"action": "navigate", "url": sites.base + "/"})
        figures["context"] = (time.perf_counter() - started) * 1000 / CONTEXTS
        figures["memory"] = (browser_pss_bytes() - base) / CONTEXTS / 2**20
        first = RequestContext.local_owner("bench-0", "web")
        figures["snapshot"] = await _median_ms(lambda: tool.invoke(first, {"action": "snapshot"}))

        async def click() -> None:
            snap = str(await tool.invoke(first, {"action": "snapshot"}))
            ref = _button_ref(snap)
            started = time.perf_counter()
            await tool.invoke(first, {"action": "click", "ref": ref, "element": "Place order"})
            clicks.append((time.perf_counter() - started) * 1000)

        clicks: list[float] = []
        for _ in range(ROUNDS):
            await click()
        figures["click"] = statistics.median(clicks)
    finally:
        await engine.close()
    return figures


async def _direct(sites: Sites) -> dict[str, float]:
    cfg = parse_settings({}).browser
    figures: dict[str, float] = {}
    started = time.perf_counter()  # the driver's start counts on both sides
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=find_executable(cfg), chromium_sandbox=sandboxed(cfg), args=LAUNCH_ARGS
        )
        figures["launch"] = (time.perf_counter() - started) * 1000
        base = browser_pss_bytes()
        pages = []
        started = time.perf_counter()
        for _ in range(CONTEXTS):
            context = await browser.new_context(viewport={"width": 1280, "height": 800})
            page = await context.new_page()
            await page.goto(sites.base + "/", wait_until="domcontentloaded")
            await page.aria_snapshot(mode="ai")
            pages.append(page)
        figures["context"] = (time.perf_counter() - started) * 1000 / CONTEXTS
        figures["memory"] = (browser_pss_bytes() - base) / CONTEXTS / 2**20
        page = pages[0]
        figures["snapshot"] = await _median_ms(lambda: page.aria_snapshot(mode="ai"))

        snap = await page.aria_snapshot(mode="ai")
        ref = _button_ref(snap)

        async def click() -> None:
            await page.locator(f"aria-ref={ref}").click()
            await page.aria_snapshot(mode="ai")

        figures["click"] = await _median_ms(click)
        await browser.close()
    return figures


async def _run() -> None:
    sites = await start_sites()
    try:
        direct = await _direct(sites)
        ours = await _ours(sites)
    finally:
        await sites.close()
    print(f"{'step':<26}{'browser tools':>14}{'Playwright':>12}{'ratio':>8}")
    rows = [
        ("launch (ms)", "launch"),
        ("new context + page (ms)", "context"),
        ("snapshot (ms, median)", "snapshot"),
        ("click + snapshot (ms)", "click"),
        ("memory per context (MB)", "memory"),
    ]
    for label, key in rows:
        ratio = ours[key] / direct[key] if direct[key] else float("nan")
        print(f"{label:<26}{ours[key]:>14.1f}{direct[key]:>12.1f}{ratio:>7.2f}×")


def main() -> None:
    """Print the table (needs Chromium: apt-get install chromium fonts-noto-cjk)."""
    asyncio.run(_run())
