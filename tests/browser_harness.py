"""Playwright on Debian's chromium (no browser download), for the web page tests."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path("/tmp/web-shots")


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless chromium; fails (not skips) when `make test`'s apt packages are missing."""
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: `make test` installs it (apt-get install chromium)")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            await browser.close()


def shot_path(name: str) -> str:
    """Where a screenshot goes (/tmp/web-shots/<name>.png)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    return str(SHOTS / f"{name}.png")
