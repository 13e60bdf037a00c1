"""Who may use the browser: never a non-owner in Lark; owners' clicks asked per page origin."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from larkbot.config_sections import BrowserConfig
from larkbot.context import RequestContext
from larkbot.policy import Allow, Ask, Policy
from tests.browser_site import start_sites
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, message_event, settings_for
from tests.test_lark_service_guard import tool_names, tool_results
from tests.test_tool_images import image_parts
from tools.browser.engine import BrowserEngine, SnapshotOwner
from tools.builtin.browser_page import BrowserPageTool

BROWSER_TOOLS = {"browser_session", "browser_tab", "browser_page"}
GUEST = "ou_guest"


async def _turn(s: Served, fake_lark: FakeLark, sender: str) -> None:
    before = len(fake_lark.sent)
    event = message_event("open the page", sender=sender, chat_id=f"oc_{sender}")
    assert (await s.post_event(event))[0] == 200
    await fake_lark.wait_for(lambda: len(fake_lark.sent) > before, timeout=30)
    assert await s.app.idle(30)


async def test_non_owner_in_lark_never_gets_a_browser_tool(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    # the model asks for the browser anyway (as a prompt-injected model might)
    fake_llm.reply_tools(("browser_page", {"action": "navigate", "url": "https://example.com"}))
    fake_llm.reply_text("I cannot.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        await _turn(s, fake_lark, GUEST)
        engine = s.app.core.runtime.services["browser"]
        assert isinstance(engine, BrowserEngine) and not engine.running  # never even started
        assert not tool_names(fake_llm.requests[0]) & BROWSER_TOOLS
        (refusal,) = tool_results(fake_llm.requests[1])
        assert "only the bot's owner" in refusal
        fake_llm.reply_text("Which page?")
        await _turn(s, fake_lark, OWNER)
        assert tool_names(fake_llm.requests[2]) >= BROWSER_TOOLS  # owners do get them


async def test_consent_is_asked_once_per_page_origin() -> None:
    engine = BrowserEngine(BrowserConfig)  # never started: consent is decided before any run
    tool = BrowserPageTool(None, engine)  # type: ignore[arg-type]
    pages = [
        "https://shop.example.com/cart",
        "https://shop.example.com/pay",
        "https://bank.example",
    ]
    for number, url in enumerate(pages, 1):
        labels = {"e5": 'button "Submit order"', "e6": 'textbox "Card number"'}
        engine.remember_snapshot(number, SnapshotOwner("s1", "t1", url, labels))
    policy, ctx = Policy(dict), RequestContext.local_owner("s1", "cli")
    asked: list[Ask] = []

    def run(**args: Any) -> None:
        decision = policy.decide(tool, args, ctx)
        if isinstance(decision, Ask):
            asked.append(decision)
            policy.remember(ctx, decision)  # the owner answers "yes for this session"
        else:
            assert isinstance(decision, Allow), decision

    run(action="click", ref="s1e5", element="the order button")
    run(action="type", ref="s2e6", text="4111")  # same origin: already granted
    run(action="click", ref="s3e5", element="Submit")  # another origin: asked again
    run(action="snapshot")  # reading is never asked
    assert [a.scope for a in asked] == ["https://shop.example.com", "https://bank.example"]
    assert asked[0].prompt == (
        'Click button "Submit order" (the order button) on https://shop.example.com'
    )
    run(action="upload", ref="s1e5", paths=["a.pdf"])  # uploads: asked every time
    run(action="upload", ref="s1e5", paths=["a.pdf"])
    assert [a.always for a in asked[2:]] == [True, True]


def test_a_page_read_does_not_ask_each_step_but_other_untrusted_text_does() -> None:
    engine = BrowserEngine(BrowserConfig)
    tool = BrowserPageTool(None, engine)  # type: ignore[arg-type]
    engine.remember_snapshot(1, SnapshotOwner("s1", "t1", "https://shop.example.com/", {}))
    policy = Policy(dict)
    read_page = RequestContext.local_owner("s1", "lark").with_untrusted(
        "browser_page https://shop.example.com/ (output not written by the owner)"
    )
    click = {"action": "click", "ref": "s1e5", "element": "Buy"}
    assert isinstance(policy.decide(tool, click, read_page), Allow)  # the owner's message
    other = read_page.with_untrusted("lark_read_messages oc_1 (output not written by the owner)")
    asked = policy.decide(tool, click, other)
    assert (
        isinstance(asked, Ask)
        and asked.always
        and asked.sources == ("lark_read_messages oc_1 (output not written by the owner)",)
    )
    assert isinstance(policy.decide(tool, {"action": "snapshot"}, other), Allow)  # reading
    assert isinstance(policy.decide(tool, {"action": "navigate", "url": "https://a.b"}, other), Ask)


async def test_doctor_launches_the_browser_or_says_how_to_install_it(home: Path) -> None:
    from larkbot.config import parse_settings
    from tools.browser.doctor import check_browser

    ok = await check_browser(parse_settings({}), None)  # type: ignore[arg-type]
    assert ok.ok and ok.detail.startswith("Chromium 1"), ok
    missing = parse_settings({"browser": {"executable_path": "/nonexistent/chromium"}})
    bad = await check_browser(missing, None)  # type: ignore[arg-type]
    assert not bad.ok and "apt-get install chromium fonts-noto-cjk" in bad.fix
    off = {"tools": {"disabled": ["browser_session", "browser_tab", "browser_page"]}}
    skipped = await check_browser(
        parse_settings({**off, "browser": missing.browser.model_dump()}), None
    )  # type: ignore[arg-type]
    assert skipped.ok and "disabled" in skipped.detail


async def test_owner_screenshot_arrives_as_a_lark_image_message(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    sites = await start_sites()
    try:
        fake_llm.reply_tools(("browser_page", {"action": "navigate", "url": sites.base + "/"}))
        fake_llm.reply_tools(("browser_page", {"action": "screenshot"}))
        fake_llm.reply_text("Here is the shop.")
        private = {"web_fetch": {"allow_private_networks": True}}  # the test site is on 127.0.0.1
        settings = settings_for(
            home, fake_lark.domain, fake_llm.base_url, tools=private, llm={"vision": True}
        )
        async with Served(settings) as s:
            before = len(fake_lark.sent)
            event = message_event("show me the shop", sender=OWNER, chat_id="oc_owner")
            assert (await s.post_event(event))[0] == 200
            await fake_lark.wait_for(
                lambda: any(m["msg_type"] == "image" for m in fake_lark.sent[before:]), timeout=30
            )
            assert await s.app.idle(30)
        assert "Welcome to the test shop" in tool_results(fake_llm.requests[1])[0]
        (upload,) = [u for u in fake_lark.uploads if u.kind == "image"]
        assert upload.content[:8] == b"\x89PNG\r\n\x1a\n" and upload.name.endswith(".png")
        (image,) = [m for m in fake_lark.sent if m["msg_type"] == "image"]
        assert image["body"] == {"image_key": upload.key}
        assert image["reply_to"] == event["event"]["message"]["message_id"]
        # the model sees the screenshot too (llm.vision): the same PNG, as an image part
        (seen,) = image_parts(fake_llm.requests[2])
        assert seen.startswith("data:image/png;base64,")
        assert base64.b64decode(seen.split(",", 1)[1]) == upload.content
        assert image_parts(fake_llm.requests[1]) == []  # a navigate sends no image
    finally:
        await sites.close()
