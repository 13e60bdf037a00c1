"""The web page on a phone (360 and 390 px wide), in a real browser, in both languages: nothing
is wider than the screen (in English the one-row header was 458 px), the header's buttons and
the login dialog lie inside it, and the menu's sidebar opens under the header."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.browser_harness import chromium, shot_path
from tests.lark_harness import Served
from tests.test_web_browser import TIMEOUT
from tests.web_harness import WEB_TOKEN, web_settings

PHONES = [(360, "en-US"), (360, "zh-CN"), (390, "en-US"), (390, "zh-CN")]


async def _inside(page: Page, selector: str, width: int) -> None:
    """`selector`'s box lies within the viewport's width, and the page is no wider."""
    assert await page.evaluate("document.documentElement.scrollWidth") <= width
    box = await page.locator(selector).bounding_box()
    assert box is not None, selector
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, box)


@pytest.mark.parametrize(("width", "locale"), PHONES)
async def test_nothing_overflows_a_phone(home: Path, width: int, locale: str) -> None:
    hosted = web_settings(home, "https://api.openai.com/v1", llm={"api_key": ""})  # the notice
    async with Served(hosted) as s, chromium() as browser:
        ctx = await browser.new_context(
            viewport={"width": width, "height": 760}, locale=locale, is_mobile=True, has_touch=True
        )
        page = await ctx.new_page()
        name = f"phone-{width}-{locale[:2]}"
        await page.goto(s.url("/"))
        await expect(page.locator("#login")).to_be_visible(timeout=TIMEOUT)
        for part in ("#login-form", "#login-form h1", "#token", "#login-form button"):
            await _inside(page, part, width)
        box = await page.locator("#login-form").bounding_box()
        assert box is not None and abs(box["x"] * 2 + box["width"] - width) <= 1  # centred
        await page.screenshot(path=shot_path(f"{name}-login"))
        await page.fill("#token", WEB_TOKEN)
        await page.click("#login-form button")
        await expect(page.locator("#notice")).to_be_visible(timeout=TIMEOUT)
        await expect(page.locator("#setup")).to_be_visible()
        for part in ("#logout", "#lang", "#menu", "#nav-memory", "#notice", "#setup", "#send"):
            await _inside(page, part, width)
        await page.screenshot(path=shot_path(f"{name}-chat"))
        await page.click("#menu")  # the sessions slide in below the whole header
        aside = page.locator("#sidebar")
        await expect(aside).to_be_in_viewport(timeout=TIMEOUT)
        header = await page.locator("header.bar").bounding_box()
        # the slide's transition is over once the computed transform is the open state's `none`
        # (mid-slide it is a translateX matrix, and the box is still partly off screen)
        await expect(aside).to_have_css("transform", "none", timeout=TIMEOUT)
        side = await aside.bounding_box()
        assert header is not None and side is not None
        assert side["x"] >= 0 and side["y"] >= header["y"] + header["height"] - 1
        await page.screenshot(path=shot_path(f"{name}-menu"))
        await ctx.close()
