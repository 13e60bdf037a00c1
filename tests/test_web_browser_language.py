"""The web page's first screen and its languages, in a real browser: example prompts after the
login (clickable, in the page's language), the login hint's command as code, and the 中/EN
switch redrawing what is already shown (consent cards, tool states, labels), not the model's
words."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from tests.browser_harness import chromium, shot_path
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.test_web_browser import TIMEOUT, log_in, say
from tests.web_harness import outside_tmp, web_settings


async def test_examples_after_login_in_the_pages_language(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("I can search, schedule and **more**.")
    async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
        page = await browser.new_page(viewport={"width": 1100, "height": 800}, locale="en-US")
        await page.goto(s.url("").rstrip("/") + "/")
        hint = page.locator("#login p[data-i18n=loginHint]")
        await expect(hint.locator("code")).to_have_text("larkbot serve", timeout=TIMEOUT)
        await expect(hint).not_to_contain_text("`")
        await log_in(page, s.url("").rstrip("/"))
        examples = page.locator("#examples button.example")
        await expect(examples).to_have_count(4, timeout=TIMEOUT)  # not a blank page
        await expect(examples.first).to_have_text("What can you do?")
        await page.screenshot(path=shot_path("7-examples-en"))
        await page.click("#lang")
        await expect(examples.first).to_have_text("你能做什么？")
        await expect(page.locator("#examples .examples-title")).to_have_text("可以试试：")
        await examples.first.click()  # sent as typed, in the language shown
        await expect(page.locator(".msg.user .body")).to_have_text("你能做什么？", timeout=TIMEOUT)
        await expect(page.locator(".msg.assistant .body").last).to_contain_text(
            "schedule and more", timeout=TIMEOUT
        )
        await expect(page.locator("#examples")).to_have_count(0)
        users = [m["content"] for m in fake_llm.requests[0]["messages"] if m["role"] == "user"]
        assert users == ["你能做什么？"]
        await page.click("#new-chat")  # a new chat offers them again
        await expect(examples).to_have_count(4)


async def test_language_switch_redraws_cards_states_and_labels(
    home: Path, fake_llm: FakeLLM
) -> None:
    with outside_tmp() as work:
        fake_llm.reply_tools(("file_write", {"path": str(work / "a.md"), "content": "a"}))
        fake_llm.reply_text("Saved it.")
        async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
            page = await browser.new_page(viewport={"width": 1100, "height": 800}, locale="en-US")
            await log_in(page, s.url("").rstrip("/"))
            await say(page, "save a")
            card = page.locator(".consent-card")
            await expect(card.locator(".consent-title")).to_have_text(
                "Allow this action?", timeout=TIMEOUT
            )
            expiry = await card.locator(".consent-expiry").text_content()
            await page.click("#lang")  # to Chinese while the card waits for an answer
            await expect(card.locator(".consent-title")).to_have_text("允许这个操作吗？")
            allow = card.locator("button[data-decision=allow_once]")
            await expect(allow).to_have_text("仅允许这一次")
            await expect(card.locator("button[data-decision=deny]")).to_have_text("拒绝")
            await expect(card.locator(".consent-expiry")).to_contain_text("过期时间")
            assert await card.locator(".consent-expiry").text_content() != expiry
            await expect(page.locator(".msg.user .who")).to_have_text("你")
            await allow.click()
            await expect(card.locator(".consent-outcome")).to_have_text("已允许", timeout=TIMEOUT)
            answer = page.locator(".msg.assistant .body").last
            await expect(answer).to_have_text("Saved it.", timeout=TIMEOUT)
            step = page.locator(".tool-step .tool-state")
            await expect(step).to_have_text("完成")
            await page.screenshot(path=shot_path("8-switched-to-zh"))
            await page.click("#lang")  # and back: everything already shown follows
            await expect(card.locator(".consent-title")).to_have_text("Allow this action?")
            await expect(card.locator(".consent-outcome")).to_have_text("Allowed")
            await expect(step).to_have_text("done")
            await expect(page.locator(".msg.user .who")).to_have_text("You")
            await expect(page.locator(".msg.assistant .who").last).to_have_text("larkbot")
            await expect(answer).to_have_text("Saved it.")  # the model's words stay as written
