"""`GET /api/memory`: the web owner sees their own memories and the chats', nobody else's."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from tests.browser_harness import chromium
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.memory_rig import ALICE, person
from tests.test_web_browser import TIMEOUT, log_in
from tests.web_harness import AUTH, chat_turn, web_settings


async def test_the_memory_view_shows_the_owners_and_the_chats_memories(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_tools(("memory_save", {"content": "The owner prefers metric units"}))
    fake_llm.reply_text("Noted.")
    settings = web_settings(home, fake_llm.base_url, owner={"open_ids": ["ou_owner"]})
    async with Served(settings) as s:
        assert s.http is not None
        await chat_turn(s.http, s.url(""), "remember: I prefer metric units")
        memory = s.app.core.memory
        assert memory is not None
        await memory.save(person(ALICE), "Alice's private fact")
        await memory.save(person(ALICE), "The team standup is at 10:00", "chat")
        async with s.http.get(s.url("/api/memory")) as r:
            assert r.status == 401
        async with s.http.get(s.url("/api/memory"), headers=AUTH) as r:
            body = await r.json()
    shown = {m["content"]: m for m in body["memories"]}
    assert set(shown) == {"The owner prefers metric units", "The team standup is at 10:00"}
    assert shown["The team standup is at 10:00"]["author"] == "Alice"
    assert not shown["The team standup is at 10:00"]["author_owner"]


async def test_the_memory_tab_in_a_browser(home: Path, fake_llm: FakeLLM) -> None:
    settings = web_settings(home, fake_llm.base_url, owner={"open_ids": ["ou_owner"]})
    async with Served(settings) as s, chromium() as browser:
        memory = s.app.core.memory
        assert memory is not None
        owner = person("ou_owner", owner=True, name="Owner")
        mine = await memory.save(owner, "The owner reads <b>news</b> at 7:00")
        await memory.save(person(ALICE), "Alice's private fact")
        page = await browser.new_page(viewport={"width": 1100, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await log_in(page, s.url("").rstrip("/"))
        await page.click("#nav-memory")
        item = page.locator(f".memory-item[data-memory-id={mine.id}]")
        await expect(item).to_contain_text("The owner reads <b>news</b> at 7:00", timeout=TIMEOUT)
        await expect(page.locator(".memory-item")).to_have_count(1)
        await expect(page.locator("#chat-view")).to_be_hidden()
        await page.click("#nav-chat")
        await expect(page.locator("#memory-view")).to_be_hidden()
    assert errors == []


async def test_the_open_memory_view_follows_the_language_switch(
    home: Path, fake_llm: FakeLLM
) -> None:
    settings = web_settings(home, fake_llm.base_url, owner={"open_ids": ["ou_owner"]})
    async with Served(settings) as s, chromium() as browser:
        memory = s.app.core.memory
        assert memory is not None
        owner = person("ou_owner", owner=True, name="Owner")
        mine = await memory.save(owner, "The owner reads news at 7:00")
        shared = await memory.save(person(ALICE), "The team standup is at 10:00", "chat")
        page = await browser.new_page(viewport={"width": 1100, "height": 800}, locale="en-US")
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await log_in(page, s.url("").rstrip("/"))
        await page.click("#nav-memory")
        heading = page.locator("#memory-view h2")
        own = page.locator(f".memory-item[data-memory-id={mine.id}] .label")
        chat = page.locator(f".memory-item[data-memory-id={shared.id}] .label")
        await expect(own).to_contain_text("about you · saved by Owner", timeout=TIMEOUT)
        await expect(heading).to_have_text("Memory")
        await page.click("#lang")  # to Chinese with the view open, not reopened
        await expect(heading).to_have_text("记忆")
        await expect(own).to_contain_text("关于你 · 保存者 Owner")
        await expect(chat).to_contain_text("群聊 oc_group · 保存者 Alice")
        await expect(chat).to_contain_text("不可信")
        await expect(own).not_to_contain_text("saved by")
        await expect(page.locator("#memory-view")).to_be_visible()
        await page.click("#lang")  # and back
        await expect(own).to_contain_text("about you · saved by Owner")
        await expect(chat).to_contain_text("untrusted")
    assert errors == []
