"""End to end: the model calls the schedule tools, runs fire through the real Agent (FakeLLM) and
land as new messages in the FakeLark chat; non-owners are refused by the Lark access policy."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from larkbot.agent import Agent
from larkbot.config import parse_settings
from larkbot.consent import NobodyToAsk
from larkbot.context import RequestContext
from larkbot.lark.api.client import LarkClient
from larkbot.lark.delivery.job_delivery import LarkNotifier
from larkbot.runtime_factory import Core, build_core
from larkbot.scheduler import ScheduleService
from larkbot.scheduler.delivery import message_uuid
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM


@dataclass
class Bot:
    """The serve-side parts a scheduled run needs, on one database."""

    core: Core
    agent: Agent
    notifier: LarkNotifier
    lark: FakeLark
    llm: FakeLLM

    def service(self) -> ScheduleService:
        """A scheduler service bound like App binds it, registered for the tools."""
        svc = ScheduleService(
            self.core.settings,
            self.core.db,
            agent=self.agent,
            notifier=self.notifier,
            poll_seconds=0.2,
            lease_seconds=1.0,
        )
        self.core.runtime.services["scheduler"] = svc
        return svc

    def sent_texts(self) -> list[str]:
        """Every message the bot posted, as text (cards flattened to their JSON)."""
        out = []
        for m in self.lark.sent:
            body = m["body"]
            out.append(body.get("text") if m["msg_type"] == "text" else json.dumps(body))
        return [t or "" for t in out]

    def tool_results(self) -> list[str]:
        """The tool messages the model was shown in its last request."""
        msgs = self.llm.requests[-1]["messages"]
        return [m["content"] for m in msgs if m.get("role") == "tool"]


@pytest.fixture
async def bot(home: Path, fake_lark: FakeLark, fake_llm: FakeLLM) -> AsyncIterator[Bot]:
    """Core + Lark agent (guard + access policy) + LarkClient against the fakes."""
    settings = parse_settings(
        {
            "owner": {"open_ids": ["ou_owner"]},
            "llm": {"base_url": fake_llm.base_url, "api_key": "k", "max_retries": 0},
            "lark": {
                "app_id": fake_lark.app_id,
                "app_secret": fake_lark.app_secret,
                "domain": fake_lark.domain,
            },
        }
    )
    core = await build_core(settings, "lark", plugins=False)
    agent = core.agent(NobodyToAsk(), "lark")
    notifier = LarkNotifier(LarkClient.from_config(core.http, settings.lark))
    yield Bot(core, agent, notifier, fake_lark, fake_llm)
    svc = core.runtime.services.get("scheduler")
    if svc is not None:
        await svc.stop(drain_seconds=1)
    await core.aclose()


def lark_ctx(sender: str, owner: bool) -> RequestContext:
    return RequestContext(
        interface="lark",
        session_id="lark:oc_chat",
        sender_id=sender,
        is_owner=owner,
        chat_id="oc_chat",
        chat_type="group",
        thread_id="omt_1",
        message_id="om_user",
    )


async def say(bot: Bot, text: str, owner: bool = True, **tool: Any) -> None:
    """One user turn in which the model calls one tool and then answers."""
    ((name, args),) = tool.items()
    bot.llm.reply_tools((name, args)).reply_text("ok")
    ctx = lark_ctx("ou_owner" if owner else "ou_guest", owner)
    await bot.agent.run(ctx.session_id, text, ctx)


async def test_create_list_restart_fire_remove_through_the_model(bot: Bot) -> None:
    first = bot.service()
    await first.start()
    job = {"job_id": "agenda", "prompt": "总结我今天的日程", "cron": "0 9 * * *"}
    await say(bot, "每天早上9点给我总结日程", schedule_create=job)
    assert "Created agenda: 每天 09:00" in bot.tool_results()[-1]
    assert " 09:00 Asia/Shanghai" in bot.tool_results()[-1]
    await first.stop()

    second = bot.service()  # a restart: new service, same database
    await second.start()
    await say(bot, "有哪些定时任务？", schedule_list={})
    listed = bot.tool_results()[-1]
    assert "agenda: 每天 09:00" in listed and "chat oc_chat" in listed

    bot.llm.reply_text("今天有 3 个会议：10:00 周会……")
    await second.set_next_run_time("agenda", datetime.now(UTC))
    await bot.lark.wait_for(lambda: any("3 个会议" in t for t in bot.sent_texts()))
    (msg,) = bot.lark.sent
    assert msg["receive_id"] == "oc_chat" and msg["receive_id_type"] == "chat_id"
    assert msg["reply_to"] is None and msg["uuid"]  # a new message, idempotent
    history = await bot.core.store.load("schedule:agenda")
    assert [m["role"] for m in history] == ["user", "assistant"]

    await say(bot, "删掉 agenda", schedule_remove={"job_id": "agenda"})
    assert "Removed agenda" in bot.tool_results()[-1]
    assert await second.list() == []
    # A sentinel run proves the scheduler processed the store after the removal.
    await say(
        bot, "探针", schedule_create={"job_id": "probe", "prompt": "p", "interval_minutes": 9}
    )
    bot.llm.reply_text("probe ran")
    await second.set_next_run_time("probe", datetime.now(UTC))
    await bot.lark.wait_for(lambda: len(bot.lark.sent) == 2)
    assert "probe ran" in bot.sent_texts()[1]
    assert sum("3 个会议" in t for t in bot.sent_texts()) == 1


async def test_failed_run_reported_in_chat_and_next_run_happens(bot: Bot) -> None:
    svc = bot.service()
    await svc.start()
    await say(
        bot, "每30分钟", schedule_create={"job_id": "r", "prompt": "x", "interval_minutes": 30}
    )
    bot.llm.reply_error(500, "upstream exploded")
    await svc.set_next_run_time("r", datetime.now(UTC))
    await bot.lark.wait_for(lambda: len(bot.lark.sent) == 1)
    assert "本次运行失败" in bot.sent_texts()[0]
    assert await svc.idle(30)  # the run is over, so the next one is not an overlap

    bot.llm.reply_text("second run fine")
    await svc.set_next_run_time("r", datetime.now(UTC))
    await bot.lark.wait_for(lambda: len(bot.lark.sent) == 2)
    assert "second run fine" in bot.sent_texts()[1]
    history = await bot.core.store.load("schedule:r")
    assert sum(1 for m in history if m["role"] == "user") == 2


async def test_non_owner_cannot_create_or_remove(bot: Bot) -> None:
    svc = bot.service()
    await svc.start()
    job = {"job_id": "spam", "prompt": "x", "interval_minutes": 1}
    await say(bot, "建一个", schedule_create={**job, "job_id": "mine"})
    await say(bot, "每分钟提醒我", owner=False, schedule_create=job)
    assert "refused: schedule_create" in bot.tool_results()[-1]  # the policy's word
    await say(bot, "删掉 mine", owner=False, schedule_remove={"job_id": "mine"})
    assert "refused: schedule_remove" in bot.tool_results()[-1]
    assert [j.id for j in await svc.list()] == ["mine"]
    # a member's message is now in the shared history: the owner's next side effect needs
    # an approval naming it, and this chat has nobody to ask, so it is refused too
    await say(bot, "再建一个", schedule_create={**job, "job_id": "later"})
    assert "ou_" in bot.tool_results()[-1] and "not an owner" in bot.tool_results()[-1]
    assert [j.id for j in await svc.list()] == ["mine"]


async def test_tools_say_when_no_scheduler_runs(bot: Bot) -> None:
    await say(bot, "列出任务", schedule_list={})
    assert "scheduler is not running" in bot.tool_results()[-1]


async def test_same_run_delivered_twice_posts_once(bot: Bot) -> None:
    fire = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)
    uid = message_uuid("agenda", fire)
    assert uid == message_uuid("agenda", fire) and len(uid) <= 50
    assert uid != message_uuid("agenda", fire.replace(hour=2))
    assert uid != message_uuid("agenda", fire.replace(microsecond=1))  # `jobs run` twice a second
    await bot.notifier.notify("oc_chat", "早报", uid)
    await bot.notifier.notify("oc_chat", "早报", uid)  # e.g. a retry after a lost response
    assert len(bot.lark.sent) == 1 and bot.lark.dedup_hits == 1


async def test_an_urgent_job_buzzes_its_creator_when_it_fires(bot: Bot) -> None:
    svc = bot.service()
    await svc.start()
    job = {"job_id": "alarm", "prompt": "提醒我开会", "interval_minutes": 60, "urgent": True}
    await say(bot, "每小时加急提醒我", schedule_create=job)
    assert "buzzed to you" in bot.tool_results()[-1]
    await say(bot, "列出", schedule_list={})
    assert "chat oc_chat (urgent)" in bot.tool_results()[-1]
    bot.llm.reply_text("该开会了")
    await svc.set_next_run_time("alarm", datetime.now(UTC))
    await bot.lark.wait_for(lambda: len(bot.lark.urgents) == 1)
    (msg,) = bot.lark.sent
    assert bot.lark.urgents == [{"message_id": msg["message_id"], "user_id_list": ["ou_owner"]}]
    urgent = [r for r in bot.lark.requests if r.path.endswith("/urgent_app")]
    assert urgent[0].query == {"user_id_type": "open_id"}
