"""The browser over the web API: clicks asked once per site (origin), screenshots as events."""

from __future__ import annotations

from pathlib import Path

from tests.browser_site import start_sites
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import AUTH, chat_turn, consents, web_settings


async def test_clicks_are_asked_once_per_origin_and_screenshots_stream(
    home: Path, fake_llm: FakeLLM
) -> None:
    sites = await start_sites()
    other = sites.base.replace("127.0.0.1", "localhost")  # the same server, another origin
    # a fresh engine numbers snapshots from 1: navigate → s1, click → s2, navigate → s3
    fake_llm.reply_tools(("browser_page", {"action": "navigate", "url": sites.base + "/"}))
    fake_llm.reply_text("opened")
    click = {"action": "click", "element": "Place order button"}
    fake_llm.reply_tools(("browser_page", {**click, "ref": "s1e3"})).reply_text("clicked")
    fake_llm.reply_tools(("browser_page", {**click, "ref": "s2e3"})).reply_text("again")
    fake_llm.reply_tools(("browser_page", {"action": "navigate", "url": other + "/"}))
    fake_llm.reply_text("opened the other")
    fake_llm.reply_tools(("browser_page", {**click, "ref": "s4e3"})).reply_text("clicked")
    fake_llm.reply_tools(("browser_page", {"action": "screenshot"})).reply_text("here")
    private = {"web_fetch": {"allow_private_networks": True}}  # the test site is on 127.0.0.1
    try:
        async with Served(web_settings(home, fake_llm.base_url, tools=private)) as s:
            assert s.http is not None
            base = s.url("")
            turns = [await chat_turn(s.http, base, "open the shop", answer="allow_session")]
            sid = turns[0][0]["threadId"]
            for text in ("order", "order again", "open the other", "order there", "show me"):
                turns.append(
                    await chat_turn(s.http, base, text, session_id=sid, answer="allow_session")
                )
            asked = [[c["scope"] for c in consents(t)] for t in turns]
            assert asked == [[], [sites.base], [], [], [other], []]
            (first,) = consents(turns[1])
            assert first["description"] == (
                f'Click button "Place order" (Place order button) on {sites.base}'
            )
            results = [e["content"] for e in turns[2] if e["type"] == "TOOL_CALL_RESULT"]
            assert "Order placed: #4711" in results[0]
            (shot,) = [e["value"] for e in turns[5] if e.get("name") == "attachment"]
            assert shot["kind"] == "image" and shot["tool"] == "browser_page"
            async with s.http.get(base + shot["url"], headers=AUTH) as r:
                assert r.status == 200 and r.content_type == "image/png"
                assert (await r.read())[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        await sites.close()
