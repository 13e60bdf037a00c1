"""The page's data API over HTTP: deleting a session drops its grants; scheduled tasks and runs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import AUTH, chat_turn, consents, outside_tmp, web_settings


async def test_deleting_a_session_forgets_its_grants(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        fake_llm.reply_tools(("file_write", {"path": str(work / "a.txt"), "content": "1"}))
        fake_llm.reply_text("wrote a")
        fake_llm.reply_tools(("file_write", {"path": str(work / "b.txt"), "content": "2"}))
        fake_llm.reply_text("wrote b")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            assert s.http is not None
            one = await chat_turn(s.http, s.url(""), "write a", answer="allow_session")
            session = one[0]["threadId"]
            async with s.http.delete(s.url(f"/api/sessions/{session}"), headers=AUTH) as r:
                assert r.status == 200
            async with s.http.get(s.url(f"/api/sessions/{session}"), headers=AUTH) as r:
                assert r.status == 404  # its history is gone
            two = await chat_turn(
                s.http, s.url(""), "write b", session_id=session, answer="allow_once"
            )
        assert len(consents(one)) == 1
        assert len(consents(two)) == 1  # the session grant went with the session
        assert (work / "b.txt").read_text() == "2"


async def test_lark_histories_stay_out_of_the_browser(home: Path, fake_llm: FakeLLM) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        await s.app.core.store.append("lark:oc_chat", [{"role": "user", "content": "private"}])
        # any other id names a web client's conversation (web:lark:oc_chat), never the Lark chat
        url = s.url("/api/sessions/lark:oc_chat")
        for method, status in (("GET", 404), ("DELETE", 200)):
            async with s.http.request(method, url, headers=AUTH) as r:
                assert r.status == status
        assert await s.app.core.store.load("lark:oc_chat", 1000)  # untouched


async def test_scheduled_tasks_their_runs_and_removal(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("Top story: larks sing at dawn.")
    settings = web_settings(home, fake_llm.base_url, scheduler={"enabled": True})
    async with Served(settings) as s:
        assert s.http is not None
        sched = s.app.core.runtime.services["scheduler"]
        job = {"target": {"channel": "web"}, "creator": {"open_id": "web", "is_owner": True}}
        await sched.create("news", "summarise the news", interval_minutes=60, **job)
        await sched.execute(
            job_id="news", prompt="summarise the news", fire_time=datetime.now(UTC), **job
        )
        async with s.http.get(s.url("/api/schedules"), headers=AUTH) as r:
            body = await r.json()
        listed = body["schedules"]
        assert [j["id"] for j in listed] == ["news"] and listed[0]["next_run"]
        assert body["timezone"] == "Asia/Shanghai"  # scheduler.timezone: cron times are in it
        assert listed[0]["last_run"]["answer"] == "Top story: larks sing at dawn."
        async with s.http.get(s.url("/api/schedules/news/runs"), headers=AUTH) as r:
            runs = (await r.json())["runs"]
        assert [r["prompt"] for r in runs] == ["summarise the news"]
        async with s.http.delete(s.url("/api/schedules/news"), headers=AUTH) as r:
            assert r.status == 200
        async with s.http.delete(s.url("/api/schedules/news"), headers=AUTH) as r:
            assert r.status == 404
        async with s.http.get(s.url("/api/schedules"), headers=AUTH) as r:
            assert (await r.json())["schedules"] == []
        async with s.http.get(s.url("/api/schedules/news/runs"), headers=AUTH) as r:
            assert len((await r.json())["runs"]) == 1  # past runs stay readable
