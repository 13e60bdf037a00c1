"""Bot menu clicks and 👍/👎 feedback, end to end through the webhook and the fake Lark."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from larkbot.lark.events.menu import TASKS_PROMPT
from larkbot.storage.feedback import FeedbackStore
from tests.fakes.lark_events import envelope
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, TOKEN, Served, message_event, settings_for
from tests.web_harness import AUTH, WEB_TOKEN


def menu_click(key: str, operator: str = OWNER, event_id: str | None = None) -> dict[str, Any]:
    """An application.bot.menu_v6 envelope."""
    operator_id = {"open_id": operator, "user_id": "u1", "union_id": "on_1"}
    event = {"operator": {"operator_name": "Ann", "operator_id": operator_id}, "event_key": key}
    return envelope("application.bot.menu_v6", event, token=TOKEN, event_id=event_id)


def reaction(message_id: str, emoji: str, user: str = OWNER, kind: str = "user") -> dict[str, Any]:
    """An im.message.reaction.created_v1 envelope."""
    event = {
        "message_id": message_id,
        "reaction_type": {"emoji_type": emoji},
        "operator_type": kind,
        "user_id": {"open_id": user},
        "action_time": "1764990000000",
    }
    return envelope("im.message.reaction.created_v1", event, token=TOKEN)


def dm_lines(fake: FakeLark) -> list[dict[str, Any]]:
    """The menu lines the bot posted in people's DMs."""
    return [m for m in fake.sent if m["receive_id_type"] == "open_id"]


async def test_menu_entries_are_answered_in_the_clickers_dm(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings = settings_for(
        home, fake_lark.domain, fake_llm.base_url, lark={"menu": {"week": "Summarize my week"}}
    )
    fake_llm.reply_text("You have no scheduled tasks.").reply_text("A quiet week.")
    async with Served(settings) as s:
        await s.post_event(menu_click("tasks", event_id="ev_menu_1"))
        await fake_lark.wait_for(lambda: "You have no scheduled tasks." in fake_lark.texts())
        await s.post_event(menu_click("tasks", event_id="ev_menu_1"))  # redelivered
        await s.post_event(menu_click("new"))
        await fake_lark.wait_for(lambda: "Started a fresh conversation." in fake_lark.texts())
        await s.post_event(menu_click("week"))
        await fake_lark.wait_for(lambda: "A quiet week." in fake_lark.texts())
        await s.post_event(menu_click("no-such-entry"))
        assert await s.app.idle(30)
    lines = dm_lines(fake_lark)
    assert [m["body"]["text"] for m in lines] == [
        f"🔘 {TASKS_PROMPT[:59]}…",
        "🔘 /new",
        "🔘 Summarize my week",
    ]
    assert {m["receive_id"] for m in lines} == {OWNER}
    answers = [m for m in fake_lark.sent if m["reply_to"]]
    assert [a["reply_to"] for a in answers] == [m["message_id"] for m in lines]
    assert all(a["chat_id"] == fake_lark.p2p_chat(OWNER) for a in answers)
    prompts = [r["messages"][-1]["content"] for r in fake_llm.requests]
    assert prompts == [TASKS_PROMPT, "Summarize my week"]  # /new needed no model


async def test_menu_click_follows_the_dm_policy_for_non_owners(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings) as s:
        await s.post_event(menu_click("help", operator="ou_guest"))
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 2)
        assert await s.app.idle(30)
    line, answer = fake_lark.sent
    assert line["receive_id"] == "ou_guest" and answer["reply_to"] == line["message_id"]
    assert not fake_llm.requests


async def metric(s: Served, kind: str) -> float:
    """larkbot_feedback_total{kind} as /metrics shows it now."""
    async with aiohttp.ClientSession() as http, http.get(s.url("/metrics")) as resp:
        text = await resp.text()
    prefix = f'larkbot_feedback_total{{kind="{kind}"}} '
    found = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(found[0].split()[-1]) if found else 0.0


async def test_thumbs_on_an_answer_are_stored_once_and_counted(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    fake_llm.reply_text("Paris.")
    fake_lark.add_message("om_q1", "oc_dm", sender={"id": OWNER, "sender_type": "user"})
    async with Served(settings) as s:
        up0, down0 = await metric(s, "up"), await metric(s, "down")
        await s.post_event(message_event("capital of France?", message_id="om_q1"))
        await fake_lark.wait_for(lambda: "Paris." in fake_lark.texts())
        answer = fake_lark.sent[-1]["message_id"]
        for event in [
            reaction(answer, "THUMBSUP"),
            reaction(answer, "THUMBSUP"),  # the same reaction again: stored once
            reaction(answer, "ThumbsDown", user="ou_guest"),
            reaction(answer, "SMILE"),  # not feedback
            reaction(answer, "THUMBSUP", user="cli_other", kind="app"),  # an app
            reaction("om_q1", "THUMBSUP"),  # on the person's own message
        ]:
            status, _ = await s.post_event(event)
            assert status == 200
        assert await s.app.idle(30)  # the reactions' work included: stored by now
        counts = await FeedbackStore(s.app.core.db).counts("lark:oc_dm")
        assert counts == {"up": 1, "down": 1}
        assert await metric(s, "up") == up0 + 1 and await metric(s, "down") == down0 + 1
    assert not fake_lark.reactions  # the bot never reacts to anybody's message


async def test_thumbs_on_a_scheduled_jobs_message_show_on_the_web_page(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, web={"token": WEB_TOKEN})
    fake_llm.reply_text("Weekly report: all green.")
    async with Served(settings) as s:
        scheduler = s.app.core.runtime.services["scheduler"]
        target = {"channel": "lark", "chat_id": "oc_chat", "thread_id": ""}
        creator = {"open_id": OWNER, "is_owner": True}
        await scheduler.create(
            "weekly", "report", interval_minutes=60, target=target, creator=creator
        )
        await scheduler.set_next_run_time("weekly", datetime.now(UTC))
        await fake_lark.wait_for(lambda: any("all green" in m["content"] for m in fake_lark.sent))
        (job_message,) = fake_lark.sent
        await s.post_event(reaction(job_message["message_id"], "THUMBSUP"))
        assert await s.app.idle(30)  # the reaction is stored
        async with aiohttp.ClientSession(headers=AUTH) as http:
            async with http.get(s.url("/api/schedules")) as resp:
                (job,) = (await resp.json())["schedules"]
            assert job["feedback"] == {"up": 1, "down": 0}
            async with http.get(s.url("/api/sessions/schedule:weekly")) as resp:
                assert (await resp.json())["feedback"] == {"up": 1, "down": 0}
