"""The web page in a real browser: log in, stream, consent card, A2UI card, schedules, XSS."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from PIL import Image
from playwright.async_api import Page, expect

from cards.a2ui_catalog import CATALOG_ID
from tests.browser_harness import chromium, shot_path
from tests.cards_samples import SAMPLES
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import WEB_TOKEN, outside_tmp, web_settings

TIMEOUT = 15_000  # ms, per expectation


async def log_in(page: Page, base: str, shot: str = "") -> None:
    await page.goto(base + "/")
    await expect(page.locator("#login")).to_be_visible(timeout=TIMEOUT)
    await page.fill("#token", "wrong")
    await page.click("#login-form button")
    await expect(page.locator("#login-error")).not_to_be_empty(timeout=TIMEOUT)
    if shot:
        await page.screenshot(path=shot_path(shot))
    await page.fill("#token", WEB_TOKEN)
    await page.click("#login-form button")
    await expect(page.locator("#login")).to_be_hidden(timeout=TIMEOUT)


async def say(page: Page, text: str) -> None:
    await page.fill("#input", text)
    await page.click("#send")


async def test_chat_consent_and_a2ui_card_in_the_browser(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        target = work / "plan.md"
        fake_llm.reply_text("Hello! I am **larkbot**, streaming this answer.", text_chunk=3)
        fake_llm.reply_tools(("file_write", {"path": str(target), "content": "# plan"}))
        fake_llm.reply_text("Saved your plan.")
        fake_llm.reply_tools(
            ("ui_card", {"card": SAMPLES["compare"]}),
            ("ui_card", {"card": SAMPLES["rank"]}),
            ("ui_card", {"card": SAMPLES["timeline"]}),
        )
        fake_llm.reply_text("Redmi is the cheapest.")
        chart = work / "chart.png"
        Image.new("RGB", (120, 60), "orange").save(chart)
        fake_llm.reply_tools(("send_file", {"path": str(chart), "caption": "sales chart"}))
        fake_llm.reply_text("There you go.")
        async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
            page = await browser.new_page(viewport={"width": 1100, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on(  # CSP violations are console errors: none, the renderer included
                "console",
                lambda m: (
                    errors.append(f"{m.text} {m.location}")
                    if m.type == "error" and "401" not in m.text
                    else None
                ),
            )
            await log_in(page, s.url("").rstrip("/"), shot="0-login-wrong-token")

            await say(page, "hi there")
            answer = page.locator(".msg.assistant .body").last
            await expect(answer).to_contain_text("streaming this answer", timeout=TIMEOUT)
            await expect(answer.locator("strong")).to_have_text("larkbot")  # markdown rendered
            await page.screenshot(path=shot_path("1-streamed-answer"))

            await say(page, "save my plan")
            card = page.locator(".consent-card")
            await expect(card).to_contain_text("file_write", timeout=TIMEOUT)
            await expect(card.locator("button")).to_have_count(3)
            await page.screenshot(path=shot_path("2-consent-card"))
            await card.locator("button[data-decision=allow_once]").click()
            await expect(card).to_have_class("consent-card resolved allowed", timeout=TIMEOUT)
            await expect(page.locator(".msg.assistant .body").last).to_have_text(
                "Saved your plan.", timeout=TIMEOUT
            )
            step = page.locator(".tool-step").last
            await expect(step).to_have_class("tool-step ok")
            assert target.read_text() == "# plan"

            await say(page, "compare phones")
            surface = page.locator(
                ".a2ui-surface", has_text="Phones under"
            )  # calls run in parallel
            await expect(surface).to_contain_text("Phones under 4000 CNY", timeout=TIMEOUT)
            # drawn by the official A2UI Lit renderer (its basic catalog's elements)
            await expect(surface.locator("a2ui-basic-row")).to_have_count(4)  # header + 3 rows
            await expect(surface.locator(".a2ui-divider")).to_have_count(3)
            await expect(surface).to_contain_text("华为 nova 12")
            # rank and timeline: the basic catalog only (a List of Rows), as A2UI publishes it
            ranking = page.locator(".a2ui-surface", has_text="Python web frameworks")
            await expect(ranking.locator("h4.a2ui-text")).to_have_text(["1.", "2.", "3.", "4."])
            await expect(ranking.locator("a2ui-basic-row")).to_have_count(4)
            first = await ranking.locator("a2ui-basic-row").first.bounding_box()
            number = await ranking.locator("h4.a2ui-text").first.bounding_box()
            name = await ranking.locator("strong", has_text="Django").bounding_box()
            assert first and number and name and number["x"] < name["x"], (number, name)
            timeline = page.locator(".a2ui-surface", has_text="Release 2.0")
            await expect(timeline.locator("a2ui-basic-row")).to_have_count(3)
            await expect(timeline.locator("a2ui-basic-row").nth(1)).to_contain_text("200 testers")
            await expect(page.locator(".msg.assistant .body").last).to_have_text(
                "Redmi is the cheapest.", timeout=TIMEOUT
            )
            await page.screenshot(path=shot_path("3-compare-card"), full_page=True)

            await say(page, "send the chart")
            img = page.locator("img.attachment-image")
            await expect(img).to_be_visible(timeout=TIMEOUT)
            # loaded through the authenticated file endpoint, allowed by the CSP (expect, not
            # wait_for_function: a polled string expression is an eval the page's CSP refuses)
            await expect(img).to_have_js_property("naturalWidth", 120, timeout=TIMEOUT)

            await expect(page.locator("#sessions li")).to_have_count(1)
            await expect(page.locator("#sessions li")).to_contain_text("hi there")
            assert errors == []


EVIL = (
    'Look: <script>window.__pwned = "script"</script> '
    "<img src=x onerror=\"window.__pwned = 'img'\"> and "
    "[click me](javascript:window.__pwned='link') and <b onmouseover=alert(1)>bold</b>"
)


BADGE = "<img src=x onerror=alert(2)>"


def evil_card() -> list[dict[str, object]]:
    """Hand-written A2UI whose texts carry the same injection."""
    surface = {"surfaceId": "evil", "catalogId": CATALOG_ID}
    components = [
        {"id": "root", "component": "Card", "child": "body"},
        {"id": "body", "component": "Column", "children": ["badge", "text"]},
        {"id": "badge", "component": "Text", "text": BADGE, "variant": "h4"},
        {"id": "text", "component": "Text", "text": EVIL},
    ]
    return [
        {"version": "v0.9", "createSurface": surface},
        {"version": "v0.9", "updateComponents": {"surfaceId": "evil", "components": components}},
    ]


async def test_injected_html_renders_as_text(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text(EVIL)
    fake_llm.reply_tools(("ui_card", {"messages": evil_card()}))
    fake_llm.reply_text("A card.")
    fake_llm.reply_tools(("ui_card", {"messages": evil_card()}))  # the same surface id again
    fake_llm.reply_text("The same card.")
    async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
        page = await browser.new_page(viewport={"width": 390, "height": 800})  # a phone
        await log_in(page, s.url("").rstrip("/"))
        await say(page, "show me html")
        body = page.locator(".msg.assistant .body").last
        await expect(body).to_contain_text("<script>", timeout=TIMEOUT)  # shown, not run
        await expect(body).to_contain_text("onerror=")
        assert await body.locator("script, img, b").count() == 0
        link = body.locator("a")
        await expect(link).to_have_text("click me")
        assert await link.get_attribute("href") is None
        await link.click()
        assert await page.evaluate("window.__pwned") is None

        await say(page, "and as a card")  # A2UI text goes through the same sanitizer
        card = page.locator(".a2ui-surface").first
        await expect(card).to_contain_text("<script>", timeout=TIMEOUT)
        await expect(card.locator("h4.a2ui-text")).to_have_text(BADGE)  # a heading is text too
        assert await card.locator("script, img, b").count() == 0
        assert await card.locator("a").get_attribute("href") is None
        assert await page.evaluate("window.__pwned") is None
        await page.screenshot(path=shot_path("4-injection-as-text-phone"), full_page=True)
        await say(page, "once more")
        await expect(page.locator(".a2ui-surface")).to_have_count(2, timeout=TIMEOUT)
        await expect(page.locator(".a2ui-error")).to_have_count(0)


async def test_scheduled_tasks_view_shows_the_last_run(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("Top story: **larks** sing at dawn.")
    settings = web_settings(home, fake_llm.base_url, scheduler={"enabled": True})
    async with Served(settings) as s, chromium() as browser:
        sched = s.app.core.runtime.services["scheduler"]
        job = {
            "target": {"channel": "web"},
            "creator": {"open_id": "web", "is_owner": True},
        }
        await sched.create("morning-news", "summarise the news", interval_minutes=60, **job)
        await sched.create("standup", "remind me of the standup", cron="30 9 * * 1,3", **job)
        await sched.execute(
            job_id="morning-news",
            prompt="summarise the news",
            fire_time=datetime.now(UTC),
            **job,
        )
        page = await browser.new_page(viewport={"width": 1100, "height": 800}, timezone_id="UTC")
        await log_in(page, s.url("").rstrip("/"))
        await page.click("#nav-schedules")
        card = page.locator(".schedule[data-job-id=morning-news]")
        await expect(card).to_contain_text("summarise the news", timeout=TIMEOUT)
        await expect(card.locator(".schedule-last .answer strong")).to_have_text("larks")
        await card.locator(".schedule-runs summary").click()
        await expect(card.locator(".run")).to_have_count(1, timeout=TIMEOUT)
        await expect(card.locator(".schedule-when")).to_have_text("every 60 min")
        standup = page.locator(".schedule[data-job-id=standup] .schedule-when")
        await expect(standup).to_have_text("every Mon, Wed 09:30 (Asia/Shanghai)")  # not UTC
        # the run times are the browser's: that zone is named too
        await expect(card.locator(".schedule-next")).to_contain_text("(your time, UTC)")
        await expect(card.locator(".schedule-last .label")).to_contain_text("(your time, UTC)")
        await page.click("#lang")  # and in Chinese
        await expect(page.locator("#nav-schedules")).to_have_text("定时任务")
        await card.locator(".schedule-runs summary").click()  # the view was redrawn in Chinese
        await expect(card.locator(".run")).to_have_count(1, timeout=TIMEOUT)
        await expect(card.locator(".schedule-next")).to_contain_text("下次运行")
        await expect(card.locator(".schedule-when")).to_have_text("每 60 分钟")
        await expect(standup).to_have_text("每周一、三 09:30 (Asia/Shanghai)")
        await expect(card.locator(".schedule-next")).to_contain_text("（你的时间：UTC）")
        await page.screenshot(path=shot_path("5-scheduled-tasks-zh"))


async def test_a_reload_mid_turn_rejoins_it(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        target = work / "kept.txt"
        fake_llm.reply_tools(("file_write", {"path": str(target), "content": "ok"}))
        fake_llm.reply_text("Written after the reload.")
        async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
            page = await browser.new_page(viewport={"width": 1100, "height": 800})
            await log_in(page, s.url("").rstrip("/"))
            await say(page, "write while I reload")
            await expect(page.locator(".consent-card")).to_be_visible(timeout=TIMEOUT)
            await page.reload()  # the turn waits on the server, not in this tab
            await expect(page.locator("#sessions li")).to_have_count(1, timeout=TIMEOUT)
            await page.locator("#sessions .session-open").click()
            card = page.locator(".consent-card")
            await expect(card).to_be_visible(timeout=TIMEOUT)  # replayed from the run's log
            await card.locator("button[data-decision=allow_session]").click()
            await expect(page.locator(".msg.assistant .body").last).to_have_text(
                "Written after the reload.", timeout=TIMEOUT
            )
            assert target.read_text() == "ok"


async def test_stop_button_and_the_session_list_on_a_phone(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("too late", delay=5.0)
    async with Served(web_settings(home, fake_llm.base_url)) as s, chromium() as browser:
        page = await browser.new_page(viewport={"width": 390, "height": 800})
        await log_in(page, s.url("").rstrip("/"))
        await say(page, "a slow question")
        await expect(page.locator("#stop")).to_be_visible(timeout=TIMEOUT)
        await expect(page.locator("#send")).to_be_hidden()
        await page.click("#stop")
        await expect(page.locator(".msg.error .body")).to_have_text("Stopped.", timeout=TIMEOUT)
        await expect(page.locator("#send")).to_be_visible()
        await expect(page.locator("#sessions")).not_to_be_in_viewport()  # a drawer on a phone
        await page.click("#menu")
        sessions = page.locator("#sessions li")
        await expect(sessions).to_have_count(1, timeout=TIMEOUT)
        await expect(sessions).to_contain_text("a slow question")
        await expect(page.locator("#sessions")).to_be_in_viewport()
        await expect(page.locator("aside")).to_have_css("transform", "none")  # slid in
        await page.screenshot(path=shot_path("6-stopped-sessions-drawer-phone"))
        await sessions.locator(".session-delete").click()
        await expect(sessions).to_have_count(0, timeout=TIMEOUT)
        assert await page.locator(".msg").count() == 0  # the open chat was the deleted one
