"""The web page's Lark accounts panel (under Scheduled tasks) in a real chromium: who has
authorized the bot, their scopes; no token anywhere in the page."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from tests.browser_harness import chromium
from tests.fakes.lark_accounts import FakeAccounts
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.oauth_harness import authorized, oauth_settings
from tests.test_web_browser import TIMEOUT, log_in
from tests.web_harness import WEB_TOKEN


async def test_accounts_panel_lists_people_without_tokens(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    settings = oauth_settings(
        home, fake_lark, accounts, fake_llm.base_url, web={"token": WEB_TOKEN}
    )
    async with Served(settings) as s, chromium() as browser:
        await authorized(s, fake_lark, accounts)
        page = await browser.new_page()
        await log_in(page, s.url("").rstrip("/"))
        await page.click("#nav-schedules")
        person = page.locator("#lark-accounts .account")
        await expect(person).to_contain_text("Alice (ou_alice)", timeout=TIMEOUT)
        await expect(person.locator(".account-scopes")).to_contain_text("task:task:read")
        html = await page.content()
        assert not [t for t in accounts.issued_secrets if t in html]
        await expect(page.locator("#lark-accounts h2")).to_have_text("Lark accounts (/auth)")
        await expect(person.locator(".label")).to_contain_text("renewable until")
        await page.click("#lang")
        await expect(page.locator("#lark-accounts h2")).to_have_text("飞书授权（/授权）")
        await expect(person.locator(".label")).to_contain_text("可续期至")
