"""The setup panel in a real browser: shown after login while Lark is not configured, the QR
code drawn from the server's SVG (CSP allows no inline script), then what is left to do; and
the notice above the chat while no answer can succeed (no LLM key)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.browser_harness import chromium, shot_path
from tests.fakes.lark_app import new_app_info
from tests.fakes.lark_registration import FakeRegistration
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.test_web_browser import TIMEOUT, log_in
from tests.web_harness import AUTH, web_settings


async def test_the_first_screen_connects_lark_with_one_scan(
    home: Path, fake_llm: FakeLLM, fake_lark: FakeLark, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LARK_DOMAIN", fake_lark.domain)  # the app is read back from the fake
    fake_lark.app_info = new_app_info("larkbot")
    async with FakeRegistration() as reg:
        settings = web_settings(home, fake_llm.base_url, lark={"accounts_domain": reg.domain})
        async with Served(settings) as s, chromium() as browser:
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on(
                "console",
                lambda m: (
                    errors.append(m.text) if m.type == "error" and "401" not in m.text else None
                ),
            )
            await log_in(page, s.url("").rstrip("/"))
            panel = page.locator("#setup")
            await expect(panel).to_contain_text("Connect Lark", timeout=TIMEOUT)
            await panel.locator("button.primary").click()
            qr = panel.locator("img.setup-qr")
            await expect(qr).to_be_visible(timeout=TIMEOUT)
            assert await qr.evaluate("img => img.complete && img.naturalWidth > 0")  # it decoded
            await page.screenshot(path=shot_path("setup-1-qr"))
            await reg.scan(await panel.locator("a").get_attribute("href") or "")
            await expect(panel).to_contain_text("Lark app created", timeout=TIMEOUT)
            await expect(panel).to_contain_text("Restart `larkbot serve`")
            await page.screenshot(path=shot_path("setup-2-done"))
    assert errors == []


async def test_a_missing_llm_key_is_said_before_the_first_message(home: Path) -> None:
    hosted = web_settings(home, "https://api.openai.com/v1", llm={"api_key": ""})
    async with Served(hosted) as s, chromium() as browser:
        page = await browser.new_page(viewport={"width": 1100, "height": 800}, locale="en-US")
        await log_in(page, s.url("").rstrip("/"))
        notice = page.locator("#notice")
        await expect(notice).to_be_visible(timeout=TIMEOUT)
        await expect(notice).to_contain_text("The bot cannot answer yet")
        await expect(notice).to_contain_text("llm.api_key is empty but https://api.openai.com/v1")
        await expect(notice).to_contain_text("set LLM_API_KEY (or llm.api_key)")
        await expect(notice).to_contain_text("llm.base_url")
        await page.screenshot(path=shot_path("setup-3-no-llm-key"))
        await page.click("#lang")
        await expect(notice).to_contain_text("机器人暂时无法回答")
        await expect(notice).to_contain_text("设置 LLM_API_KEY（或 llm.api_key）")
        await expect(notice).to_contain_text("llm.base_url")
        await page.click("#lang")
        await expect(notice).to_contain_text("set LLM_API_KEY")


async def test_no_notice_while_the_model_can_answer(home: Path, fake_llm: FakeLLM) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
        page = await browser.new_page(viewport={"width": 1100, "height": 800})
        await log_in(page, s.url("").rstrip("/"))
        await expect(page.locator("#setup")).to_be_visible(timeout=TIMEOUT)  # status arrived
        await expect(page.locator("#notice")).to_be_hidden()


async def test_the_language_switch_redraws_the_connect_lark_card(
    home: Path, fake_llm: FakeLLM
) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
        page = await browser.new_page(viewport={"width": 1100, "height": 800}, locale="en-US")
        await log_in(page, s.url("").rstrip("/"))
        panel = page.locator("#setup")
        await expect(panel.locator("h2")).to_have_text("Connect Lark", timeout=TIMEOUT)
        await page.click("#lang")
        await expect(panel.locator("h2")).to_have_text("接入飞书")
        await expect(panel.locator("button.primary")).to_have_text("显示二维码")
        await expect(panel.locator("button.small")).to_have_text("稍后")
        await page.click("#lang")
        await expect(panel.locator("button.primary")).to_have_text("Show the QR code")


async def test_later_puts_the_card_off_until_the_setup_state_changes(
    home: Path, fake_llm: FakeLLM, fake_lark: FakeLark, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LARK_DOMAIN", fake_lark.domain)
    async with FakeRegistration() as reg:
        settings = web_settings(home, fake_llm.base_url, lark={"accounts_domain": reg.domain})
        async with Served(settings) as s, chromium() as browser:
            page = await browser.new_page(viewport={"width": 1100, "height": 800})
            await log_in(page, s.url("").rstrip("/"))
            panel = page.locator("#setup")
            await expect(panel).to_contain_text("Connect Lark", timeout=TIMEOUT)
            await panel.locator("button.small").click()  # Later
            await expect(panel).to_be_hidden()

            async def reload() -> None:  # and wait until the page has read the setup status
                async with page.expect_response("**/api/setup/status") as status:
                    await page.reload()
                response = await status.value
                assert response.ok and await response.finished() is None
                await expect(page.locator("#examples")).to_be_visible(timeout=TIMEOUT)
                # checkSetup's mark: the answer was handled (a wait for time passed without it)
                await expect(page.locator("#setup[data-checked]")).to_be_attached(timeout=TIMEOUT)

            await reload()
            await expect(panel).to_be_hidden()  # still put off in this browser
            async with s.http.post(s.url("/api/setup/start"), headers=AUTH) as r:
                assert r.status == 200  # a scan begun elsewhere: the state changed
            await reload()
            await expect(panel.locator("img.setup-qr")).to_be_visible(timeout=TIMEOUT)


async def test_no_empty_card_while_serve_is_not_ready(home: Path, fake_llm: FakeLLM) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
        page = await browser.new_page(viewport={"width": 1100, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await log_in(page, s.url("").rstrip("/"))
        await expect(page.locator("#setup")).to_be_visible(timeout=TIMEOUT)
        # the page opened again while serve starts or drains:
        await page.route("**/api/setup/status", lambda route: route.fulfill(**NOT_READY))
        await page.evaluate("localStorage.clear()")
        async with page.expect_response("**/api/setup/status") as status:
            await page.reload()
        assert (await status.value).status == 503
        await expect(page.locator("#setup[data-checked]")).to_be_attached(timeout=TIMEOUT)
        await expect(page.locator("#setup")).to_be_hidden()  # no "Connect Lark" card, empty
        await expect(page.locator("#notice")).to_be_hidden()
        assert await page.evaluate("localStorage.length") == 0  # nothing a "Later" could store
    assert errors == []


async def test_a_scan_keeps_its_qr_code_through_a_503(home: Path, fake_llm: FakeLLM) -> None:
    async with FakeRegistration() as reg:
        settings = web_settings(home, fake_llm.base_url, lark={"accounts_domain": reg.domain})
        async with Served(settings) as s, chromium() as browser:
            page = await browser.new_page(viewport={"width": 1100, "height": 800})
            await log_in(page, s.url("").rstrip("/"))
            panel = page.locator("#setup")
            await expect(panel).to_contain_text("Connect Lark", timeout=TIMEOUT)
            await panel.locator("button.primary").click()
            qr = panel.locator("img.setup-qr")
            await expect(qr).to_be_visible(timeout=TIMEOUT)
            async with page.expect_response(lambda r: r.status == 503, timeout=TIMEOUT):
                await page.route(
                    "**/api/setup/status", lambda route: route.fulfill(**NOT_READY), times=1
                )
            polled = "**/api/setup/status"  # the next poll: polling went on after the 503
            async with page.expect_response(polled, timeout=TIMEOUT) as after:
                await expect(qr).to_be_visible()
            assert (await after.value).ok
            await expect(qr).to_be_visible()


NOT_READY = {"status": 503, "content_type": "application/json", "body": '{"msg": "not ready"}'}
