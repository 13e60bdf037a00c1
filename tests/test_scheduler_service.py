"""ScheduleService on real SQLite: lifecycle across restarts, failures, timezone, misfires."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from larkbot.scheduler import ScheduleError, ScheduleService
from larkbot.storage.db import Database
from tests.fakes.schedule import (
    LARK_TARGET,
    OWNER,
    RecordingNotifier,
    ScriptedAgent,
    scheduler_settings,
    service_factory,
)

Factory = Callable[..., ScheduleService]


@pytest.fixture
async def make_service(home: Path) -> AsyncIterator[Factory]:
    """Build services on the home's SQLite file; stops them and closes their databases."""
    async with service_factory(lambda: scheduler_settings(home), 0.2) as factory:
        yield factory


def now() -> datetime:
    return datetime.now(UTC)


async def probe(svc: ScheduleService, notes: RecordingNotifier) -> None:
    """Fire a sentinel job and wait for it: proves the scheduler processed the store since."""
    await svc.create("probe", "ping", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
    await svc.set_next_run_time("probe", now())
    while not notes.about("probe"):
        await notes.next()


async def test_create_list_restart_fire_remove(make_service: Factory) -> None:
    agent, notes = ScriptedAgent(["今天有 3 个会议"]), RecordingNotifier()
    first = make_service(agent=agent, notifier=notes)
    await first.start()
    await first.create(
        "agenda", "总结我的日程", cron="0 9 * * *", target=LARK_TARGET, creator=OWNER
    )
    assert [j.id for j in await first.list()] == ["agenda"]
    await first.stop()

    second = make_service(agent=agent, notifier=notes)
    await second.start()
    assert second.is_leader
    (job,) = await second.list()
    assert (job.id, job.trigger_words, job.prompt, job.creator) == (
        "agenda",
        "每天 09:00",
        "总结我的日程",
        OWNER,
    )

    await second.set_next_run_time("agenda", now())  # the declared seam: make it due now
    msg = await notes.next()
    assert msg.chat_id == "oc_chat" and "今天有 3 个会议" in msg.text
    session, prompt, ctx = agent.calls[0]
    assert (session, prompt) == ("schedule:agenda", "总结我的日程")
    assert (ctx.interface, ctx.sender_id, ctx.is_owner, ctx.chat_id) == (
        "lark",
        "ou_owner",
        True,
        "oc_chat",
    )
    rescheduled = await second.get("agenda")
    assert rescheduled and rescheduled.next_run_time
    assert rescheduled.next_run_time.astimezone(second.tz).hour == 9

    assert await second.remove("agenda")
    assert not await second.remove("agenda")
    with pytest.raises(ScheduleError):
        await second.set_next_run_time("agenda", now())
    await probe(second, notes)
    assert agent.runs_of("agenda") == 1
    assert [j.id for j in await second.list()] == ["probe"]


async def test_duplicate_id_and_bad_arguments(make_service: Factory) -> None:
    svc = make_service()
    await svc.start()
    await svc.create("daily", "x", interval_minutes=5, target=LARK_TARGET, creator=OWNER)
    with pytest.raises(ScheduleError, match=r"already exists.*schedule_remove"):
        await svc.create("daily", "y", cron="0 9 * * *", target=LARK_TARGET, creator=OWNER)
    with pytest.raises(ScheduleError, match="exactly one"):
        await svc.create("both", "y", cron="0 9 * * *", interval_minutes=5, target={}, creator={})
    with pytest.raises(ScheduleError, match="exactly one"):
        await svc.create("none", "y", target={}, creator={})
    with pytest.raises(ScheduleError, match=">= 1"):
        await svc.create("zero", "y", interval_minutes=0, target={}, creator={})
    assert [j.id for j in await svc.list()] == ["daily"]


async def test_failed_run_is_reported_and_next_run_happens(make_service: Factory) -> None:
    agent = ScriptedAgent([RuntimeError("LLM endpoint answered 500"), "第二次成功"])
    notes = RecordingNotifier()
    svc = make_service(agent=agent, notifier=notes)
    await svc.start()
    await svc.create("report", "写日报", interval_minutes=30, target=LARK_TARGET, creator=OWNER)

    await svc.set_next_run_time("report", now())
    failed = await notes.next()
    assert "运行失败" in failed.text and "500" in failed.text and failed.chat_id == "oc_chat"
    job = await svc.get("report")
    assert job and job.next_run_time and job.next_run_time > now() + timedelta(minutes=29)
    assert await svc.idle(30)

    await svc.set_next_run_time("report", now())
    ok = await notes.next()
    assert "第二次成功" in ok.text
    assert ok.uuid != failed.uuid
    assert agent.runs_of("report") == 2


async def test_nine_am_shanghai_survives_restart(make_service: Factory, home: Path) -> None:
    first = make_service()
    await first.start()
    await first.create("morning", "早报", cron="0 9 * * *", target=LARK_TARGET, creator=OWNER)
    await first.stop()

    second = make_service()
    await second.start()
    job = await second.get("morning")
    assert job and job.next_run_time
    local = job.next_run_time.astimezone(second.tz)
    assert (local.hour, local.minute, str(second.tz)) == (9, 0, "Asia/Shanghai")
    assert job.next_run_time.astimezone(UTC).hour == 1  # stored as an instant, not a wall time
    assert "next " in job.line(second.tz) and " 09:00 Asia/Shanghai" in job.line(second.tz)
    assert job.timezone == "Asia/Shanghai"


async def test_run_missed_beyond_grace_is_skipped_and_told_once(
    make_service: Factory, home: Path
) -> None:
    settings = scheduler_settings(home, misfire_grace_seconds=600)
    writer = make_service(settings, role="writer")  # e.g. `larkbot chat` while serve is down
    await writer.start()
    await writer.create(
        "standup", "站会提醒", interval_minutes=60, target=LARK_TARGET, creator=OWNER
    )
    await writer.set_next_run_time("standup", now() - timedelta(minutes=20))
    await writer.stop()

    agent, notes = ScriptedAgent(), RecordingNotifier()
    leader = make_service(settings, agent=agent, notifier=notes)
    await leader.start()
    missed = await notes.next()
    assert "错过" in missed.text and "「standup」" in missed.text and missed.chat_id == "oc_chat"
    job = await leader.get("standup")
    assert job and job.next_run_time and job.next_run_time > now()
    await probe(leader, notes)
    assert agent.runs_of("standup") == 0
    assert len(notes.about("standup")) == 1


async def test_runs_missed_within_grace_run_once(make_service: Factory, home: Path) -> None:
    writer = make_service(role="writer")
    await writer.start()
    await writer.create("tick", "tick", interval_minutes=1, target=LARK_TARGET, creator=OWNER)
    await writer.set_next_run_time("tick", now() - timedelta(minutes=5))  # 5-6 runs piled up
    await writer.stop()

    agent, notes = ScriptedAgent(), RecordingNotifier()
    leader = make_service(agent=agent, notifier=notes)
    await leader.start()
    await notes.next()
    await probe(leader, notes)
    assert agent.runs_of("tick") == 1  # coalesced
    assert not any("错过" in m.text for m in notes.sent)


async def test_cli_job_result_is_logged_not_sent(make_service: Factory) -> None:
    agent, notes = ScriptedAgent(["local result"]), RecordingNotifier()
    svc = make_service(agent=agent, notifier=notes)
    await svc.start()
    target = {"channel": "cli", "chat_id": "", "thread_id": ""}
    await svc.create(
        "local",
        "do it",
        interval_minutes=5,
        target=target,
        creator={"open_id": "local", "is_owner": True},
    )
    await svc.set_next_run_time("local", now())
    await probe(svc, notes)
    (call,) = [c for c in agent.calls if c[0] == "schedule:local"]
    assert call[2].interface == "cli" and call[2].is_owner
    assert not notes.about("local")


async def test_owner_status_is_rechecked_at_run_time(make_service: Factory) -> None:
    agent, notes = ScriptedAgent(), RecordingNotifier()
    svc = make_service(agent=agent, notifier=notes)
    await svc.start()
    former = {"open_id": "ou_former_owner", "is_owner": True}
    await svc.create("old", "x", interval_minutes=5, target=LARK_TARGET, creator=former)
    await svc.set_next_run_time("old", now())
    await notes.next()
    assert agent.calls[0][2].is_owner is False  # not in owner.open_ids any more


async def test_job_row_holds_a_text_reference_and_plain_data(
    home: Path, make_service: Factory
) -> None:
    svc = make_service()
    await svc.start()
    await svc.create("plain", "p", interval_minutes=5, target=LARK_TARGET, creator=OWNER)
    db = Database(svc.settings.storage.url)
    async with db.engine.connect() as conn:
        state = (await conn.execute(sa.text("select job_state from apscheduler_jobs"))).scalar_one()
    await db.close()
    assert b"larkbot.scheduler.runner:run_scheduled_job" in state
    assert b"ScheduleService" not in state


async def test_starts_while_a_write_transaction_of_this_loop_is_open(
    home: Path, make_service: Factory
) -> None:
    """The job store's tables are created off the loop: on it, that waited for the write lock
    held by an async-engine transaction that needed the very loop to commit, and the start
    failed after the busy timeout with "database is locked" (seen on a loaded CI machine)."""
    svc = make_service()
    db = Database(scheduler_settings(home).storage.url)
    holder = sa.Table("lock_holder", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))
    try:
        async with db.engine.begin() as conn:  # BEGIN IMMEDIATE: the write lock, held
            await conn.run_sync(holder.create)
            starting = asyncio.create_task(svc.start())
            await asyncio.sleep(0.3)  # the start runs meanwhile, in its thread
            await conn.execute(holder.insert().values(id=1))
        await asyncio.wait_for(starting, 30)
        assert await svc.list() == []
    finally:
        await db.close()
