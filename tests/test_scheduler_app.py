"""The scheduler inside `serve` (App hooks), `chat` (writer only), `larkbot jobs` and doctor."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
import structlog

from larkbot.app import App
from larkbot.config import Settings, parse_settings
from larkbot.runtime_factory import build_core
from larkbot.scheduler import ScheduleService
from larkbot.scheduler.cli import run_jobs
from larkbot.scheduler.doctor import check_scheduler
from larkbot.scheduler.wiring import writer_scheduler
from tests.core_helpers import call_tool
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.fakes.schedule import LARK_TARGET, OWNER, RecordingNotifier, ScriptedAgent


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """`larkbot jobs` configures logging onto pytest's captured stderr; undo that afterwards."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def serve_settings(lark: FakeLark, llm: FakeLLM) -> Settings:
    return parse_settings(
        {
            "owner": {"open_ids": ["ou_owner"]},
            "llm": {"base_url": llm.base_url, "api_key": "k", "max_retries": 0},
            "lark": {
                "app_id": lark.app_id,
                "app_secret": lark.app_secret,
                "domain": lark.domain,
                "streaming": False,
            },
        }
    )


async def test_serve_app_runs_the_scheduler_and_posts_to_lark(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    app = App(serve_settings(fake_lark, fake_llm))
    await app.start()
    try:
        svc = app.core.runtime.services["scheduler"]
        assert svc.running and svc.is_leader
        await svc.create("hi", "say hi", interval_minutes=60, target=LARK_TARGET, creator=OWNER)
        fake_llm.reply_text("hi from the schedule")
        await svc.run_now("hi")
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert "hi from the schedule" in fake_lark.sent[0]["content"]
        assert fake_lark.sent[0]["receive_id"] == "oc_chat"
    finally:
        await app.stop()
    assert not svc.running


async def test_chat_writes_jobs_that_serve_fires(home: Path) -> None:
    settings = parse_settings({})
    core = await build_core(settings, "cli", plugins=False)
    try:
        async with writer_scheduler(core) as svc:
            assert svc is not None and not svc.is_leader
            tool = core.registry.get("schedule_create")
            assert tool is not None
            result = await call_tool(tool, job_id="note", prompt="记一下", interval_minutes=5)
            assert "Created note: every 5 min" in str(result)
            result = await call_tool(tool, job_id="daily", prompt="p", cron="0 9 * * 1,3")
            assert "Created daily: every Mon, Wed 09:00" in str(result)  # `larkbot chat`: English
            listed = await call_tool(core.registry.get("schedule_list"))  # type: ignore[arg-type]
            assert "daily: every Mon, Wed 09:00 (0 9 * * 1,3)" in str(listed)
            assert await svc.remove("daily")
        assert "scheduler" not in core.runtime.services
        agent = ScriptedAgent(["noted"])
        leader = ScheduleService(settings, core.db, agent=agent, poll_seconds=0.2, lease_seconds=1)
        await leader.start()
        try:
            await leader.set_next_run_time("note", datetime.now(UTC))
            await leader.create("probe", "p", interval_minutes=9, target=LARK_TARGET, creator=OWNER)
            notes = RecordingNotifier()
            leader.bind(notifier=notes)
            await leader.set_next_run_time("probe", datetime.now(UTC))
            await notes.next()
        finally:
            await leader.stop()
        ((_, _, ctx),) = [c for c in agent.calls if c[0] == "schedule:note"]
        assert ctx.interface == "cli" and ctx.is_owner and ctx.chat_id == ""
    finally:
        await core.aclose()


async def _store_job(settings: Settings, job_id: str, cron: str) -> None:
    core = await build_core(settings, "cli", plugins=False)
    async with writer_scheduler(core) as svc:
        assert svc is not None
        await svc.create(job_id, "早报", cron=cron, target=LARK_TARGET, creator=OWNER)
    await core.aclose()


def test_jobs_cli_list_show_remove(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = parse_settings({})
    asyncio.run(_store_job(settings, "morning", "0 9 * * 1-5"))
    capsys.readouterr()

    def jobs(action: str, job_id: str | None = None) -> int:
        return run_jobs(settings, argparse.Namespace(action=action, job_id=job_id))

    assert jobs("list") == 0
    out = capsys.readouterr().out
    # the CLI speaks English: the schedule too, not the Lark reader's "工作日 09:00"
    assert "morning: weekdays 09:00 (0 9 * * 1-5)" in out and "Asia/Shanghai" in out
    assert jobs("show", "morning") == 0
    out = capsys.readouterr().out
    assert "session:   schedule:morning" in out and "oc_chat" in out
    assert "schedule:  weekdays 09:00 (0 9 * * 1-5)" in out and "工作日" not in out
    assert jobs("show", "nope") == 1
    shanghai = ZoneInfo("Asia/Shanghai")
    before = datetime.now(shanghai).strftime("%Y-%m-%d %H:%M")
    assert jobs("run", "morning") == 0  # due now: the leader (none here) fires it at its poll
    assert "morning is due now" in capsys.readouterr().out
    assert jobs("show", "morning") == 0
    next_run = capsys.readouterr().out.split("next run:")[1].split("\n")[0].strip()
    assert next_run[:16] in (before, datetime.now(shanghai).strftime("%Y-%m-%d %H:%M"))
    assert jobs("run", "nope") == 1 and jobs("run") == 2
    assert jobs("remove") == 2
    assert jobs("remove", "morning") == 0
    assert jobs("list") == 0
    assert "No scheduled tasks." in capsys.readouterr().out


async def test_doctor_reports_jobs_and_next_run(home: Path) -> None:
    settings = parse_settings({})
    async with httpx.AsyncClient() as http:
        empty = await check_scheduler(settings, http)
        assert empty.ok and "no scheduled tasks" in empty.detail
        await _store_job(settings, "a", "0 9 * * *")
        line = await check_scheduler(settings, http)
    assert line.ok and "1 scheduled task(s); next: a at " in line.detail
    assert "09:00 Asia/Shanghai" in line.detail
    assert "no replica is running jobs" in line.detail
