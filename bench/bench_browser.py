"""Browser figures: launch, new context, snapshot and click latency and memory per context,
through the browser tools (egress proxy, ref tagging, rendering) vs Playwright driving the same
Chromium directly (the baseline), in the same run, against the local test site.

Launch includes starting Playwright's driver on both sides. A click is followed by a fresh
snapshot on both sides, since our click returns one. Memory is the PSS of the browser
processes added per open context (one page loaded in each). Snapshot and click rounds
alternate between the two sides, so a load spike on a shared machine hits both alike.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
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
WARMUP = 5  # unmeasured rounds first, on both sides: new pages are still settling
CONTEXTS = 4
Step = Callable[[], Awaitable[float]]  # one timed round; returns its milliseconds


def _button_ref(snapshot: str) -> str:
    """The ref of the "Place order" button (after a click it is also [active])."""
    found = re.search(r'button "Place order"[^\n]*\[ref=(\w+)\]', snapshot)
    assert found, snapshot
    return found.group(1)


async def _timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


@dataclass
class Side:
    """One way of driving the browser: one-off figures, repeatable steps, and its close."""

    figures: dict[str, float]
    steps: Mapping[str, Step]
    close: Callable[[], Awaitable[None]]


async def _ours(sites: Sites) -> Side:
    settings = parse_settings({"tools": {"web_fetch": {"allow_private_networks": True}}})
    rt = ToolRuntime("web", LiveSettings(settings), None, None)  # type: ignore[arg-type]
    engine = BrowserEngine(lambda: settings.browser)
    rt.services["browser"] = engine
    tool = BrowserPageTool(rt, engine)
    figures = {"launch": await _timed(engine._ensure_browser)}
    base = browser_pss_bytes()
    started = time.perf_counter()
    for i in range(CONTEXTS):
        ctx = RequestContext.local_owner(f"bench-{i}", "web")
        await tool.invoke(ctx, {"action": "navigate", "url": sites.base + "/"})
    figures["context"] = (time.perf_counter() - started) * 1000 / CONTEXTS
    figures["memory"] = (browser_pss_bytes() - base) / CONTEXTS / 2**20
    first = RequestContext.local_owner("bench-0", "web")

    async def click() -> float:
        ref = _button_ref(str(await tool.invoke(first, {"action": "snapshot"})))
        args = {"action": "click", "ref": ref, "element": "Place order"}
        return await _timed(lambda: tool.invoke(first, args))

    snapshot = {"action": "snapshot"}
    steps = {"snapshot": lambda: _timed(lambda: tool.invoke(first, snapshot)), "click": click}
    return Side(figures, steps, engine.close)


async def _direct(sites: Sites) -> Side:
    cfg = parse_settings({}).browser
    started = time.perf_counter()  # the driver's start counts on both sides
    pw = await async_playwright().start()
    browser = await pw.chromium.launch(
        executable_path=find_executable(cfg), chromium_sandbox=sandboxed(cfg), args=LAUNCH_ARGS
    )
    figures = {"launch": (time.perf_counter() - started) * 1000}
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
    ref = _button_ref(await page.aria_snapshot(mode="ai"))

    async def click_and_snapshot() -> None:
        await page.locator(f"aria-ref={ref}").click()
        await page.aria_snapshot(mode="ai")

    async def close() -> None:
        await browser.close()
        await pw.stop()

    steps = {
        "snapshot": lambda: _timed(lambda: page.aria_snapshot(mode="ai")),
        "click": lambda: _timed(click_and_snapshot),
    }
    return Side(figures, steps, close)


async def _alternate(ours: Side, direct: Side) -> None:
    """Median of each step, the two sides taking turns round by round (same load on both)."""
    for key in ("snapshot", "click"):
        times: dict[int, list[float]] = {0: [], 1: []}
        for _ in range(WARMUP + ROUNDS):
            for number, side in enumerate((ours, direct)):
                times[number].append(await side.steps[key]())
        ours.figures[key] = statistics.median(times[0][WARMUP:])
        direct.figures[key] = statistics.median(times[1][WARMUP:])


async def _run() -> None:
    sites = await start_sites()
    direct = ours = None
    try:
        direct = await _direct(sites)  # launch, contexts and memory one side at a time
        ours = await _ours(sites)
        await _alternate(ours, direct)
    finally:
        for side in (ours, direct):
            if side is not None:
                await side.close()
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
        a, b = ours.figures[key], direct.figures[key]
        ratio = a / b if b else float("nan")
        print(f"{label:<26}{a:>14.1f}{b:>12.1f}{ratio:>7.2f}×")


def main() -> None:
    """Print the table (needs Chromium: apt-get install chromium fonts-noto-cjk)."""
    asyncio.run(_run())
