"""The page's data: web sessions (list, history, delete) and scheduled tasks with their runs.

Only web sessions (`web:…`) and scheduled-task sessions (`schedule:…`) are reachable here;
Lark chats' histories stay out of the browser. Any other id is a client's conversation id, kept
as the web session chat_request.session_key names.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from larkbot.content_parts import text_of
from larkbot.history_budget import for_display
from larkbot.storage.sessions import Message, session_title
from larkbot.web.chat_request import CLIENT_ID, session_key
from larkbot.web.handlers import error, service
from larkbot.web.service import WebService

VISIBLE = ("web:", "schedule:")
MAX_SESSIONS = 100
HISTORY_CHARS = 400_000
RUNS = 20


def _text(message: Message) -> str:
    return text_of(message.get("content"))


def _run_summary(when: float, messages: list[Message]) -> dict[str, Any]:
    """One stored turn of a scheduled task: when, the prompt, the answer, tools used."""
    answers = [_text(m) for m in messages if m.get("role") == "assistant" and _text(m)]
    tools = [
        c.get("function", {}).get("name", "")
        for m in messages
        for c in m.get("tool_calls") or ()
        if isinstance(c, dict)
    ]
    prompt = next((_text(m) for m in messages if m.get("role") == "user"), "")
    return {"at": when, "prompt": prompt, "answer": answers[-1] if answers else "", "tools": tools}


async def list_sessions(request: web.Request) -> web.Response:
    """The web sessions, newest first, with a title from their first message."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    store = svc.host.core.store
    infos = (await store.list_sessions("web:"))[:MAX_SESSIONS]
    firsts = await store.first_rows([i.session_id for i in infos])
    sessions = [
        {
            "id": i.session_id,
            "messages": i.messages,
            "updated_at": i.updated_at,
            "title": session_title(firsts.get(i.session_id, [])),
        }
        for i in infos
    ]
    stored = {i.session_id for i in infos}
    new = [  # a first turn still running: its session is stored when the turn ends
        {"id": r.session_id, "messages": 0, "updated_at": time.time(), "title": r.title}
        for r in svc.runs.active()
        if r.session_id not in stored and r.session_id.startswith("web:")
    ]
    return web.json_response({"sessions": new + sessions})


def _session_id(request: web.Request) -> str | None:
    sid = request.match_info["session_id"]
    if sid.startswith(VISIBLE):
        return sid
    return session_key(sid) if CLIENT_ID.match(sid) else None


async def get_session(request: web.Request) -> web.Response:
    """A session's messages (user, assistant, tool calls and results), oldest first."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    sid = _session_id(request)
    if sid is None:
        return error(404, "unknown session")
    messages = for_display(await svc.host.core.store.load(sid, HISTORY_CHARS))
    running = svc.runs.by_session(sid)
    if not messages and running is None:
        return error(404, "unknown session")
    feedback = await svc.host.core.feedback.counts(sid)  # 👍/👎 people gave in Lark
    return web.json_response(
        {
            "id": sid,
            "messages": messages,
            "running": running.run_id if running else None,
            "feedback": feedback,
        }
    )


async def delete_session(request: web.Request) -> web.Response:
    """Delete a session's history, its consent grants and activated tools."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    sid = _session_id(request)
    if sid is None:
        return error(404, "unknown session")
    assert svc.agent is not None
    if svc.runs.by_session(sid) is not None:
        return error(409, "a turn is running in this session; stop it first")
    await svc.agent.reset(sid)  # history + clear_session_grants + activated tools
    return web.json_response({"ok": True})


def _scheduler(svc: WebService) -> Any:
    return svc.host.core.runtime.services.get("scheduler")


async def list_schedules(request: web.Request) -> web.Response:
    """Every scheduled task with its next run and its last run's answer."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    sched = _scheduler(svc)
    if sched is None:
        return web.json_response({"schedules": [], "enabled": False})
    store, jobs = svc.host.core.store, await sched.list()
    # one query for every task's 👍/👎 (in Lark), not one per task
    feedback = await svc.host.core.feedback.counts_many([f"schedule:{j.id}" for j in jobs])
    out = []
    for job in jobs:
        last = await store.turns(f"schedule:{job.id}", limit=1)
        out.append(
            {
                "id": job.id,
                "prompt": job.prompt,
                "schedule": job.schedule,
                "describe": job.trigger_words,
                "next_run": job.next_run_time.isoformat() if job.next_run_time else None,
                "channel": job.target.get("channel", ""),
                "last_run": _run_summary(*last[-1]) if last else None,
                "feedback": feedback[f"schedule:{job.id}"],
            }
        )
    zone = str(getattr(sched, "tz", ""))  # cron times are in this zone, not the browser's
    return web.json_response({"schedules": out, "enabled": True, "timezone": zone})


async def delete_schedule(request: web.Request) -> web.Response:
    """Remove a scheduled task (its past runs stay readable)."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    sched = _scheduler(svc)
    if sched is None or not await sched.remove(request.match_info["job_id"]):
        return error(404, "unknown scheduled task")
    return web.json_response({"ok": True})


async def schedule_runs(request: web.Request) -> web.Response:
    """The task's runs (its `schedule:<id>` session), newest first."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    turns = await svc.host.core.store.turns(f"schedule:{request.match_info['job_id']}", RUNS)
    return web.json_response({"runs": [_run_summary(t, m) for t, m in reversed(turns)]})
