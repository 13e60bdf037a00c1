"""`larkbot doctor`'s browser line: launch Chromium once and print its version."""

from __future__ import annotations

import httpx
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from larkbot.checks import CheckResult
from larkbot.config import Settings
from tools.browser.launch import INSTALL_HINT, BrowserMissing, find_executable, launch_options

BROWSER_TOOLS = {"browser_session", "browser_tab", "browser_page"}


async def check_browser(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """Start the configured Chromium headless (no proxy needed: it loads nothing) and stop it."""
    cfg = settings.browser
    if set(settings.tools.disabled) >= BROWSER_TOOLS:
        return CheckResult("browser", True, "browser tools disabled (tools.disabled)")
    try:
        path = find_executable(cfg)
    except BrowserMissing as err:
        fix = f"{INSTALL_HINT}; or list {', '.join(sorted(BROWSER_TOOLS))} in tools.disabled"
        return CheckResult("browser", False, str(err).split(";")[0], fix)
    options = launch_options(cfg, "http://127.0.0.1:9")  # a closed port: nothing goes out
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**options)
            version = browser.version
            await browser.close()
    except PlaywrightError as err:
        first = str(err).splitlines()[0][:300]
        fix = (
            "set browser.sandbox: off where Chromium's sandbox cannot run (containers without "
            "user namespaces), or check the binary runs: " + path + " --version"
        )
        return CheckResult("browser", False, f"{path} did not start: {first}", fix)
    return CheckResult("browser", True, f"Chromium {version} ({path}) starts headless")
