"""HTTP handlers of the web interface: login, /chat (SSE), stopping a run, consent answers."""

from __future__ import annotations

import asyncio
import json
import mimetypes
from pathlib import Path
from typing import Any

from aiohttp import web

from larkbot.text import is_number
from larkbot.web.auth import COOKIE_NAME, COOKIE_SECONDS
from larkbot.web.chat_request import BadChat, parse_chat
from larkbot.web.consent_board import ANSWERS
from larkbot.web.runs import EventsLost, RunIdTaken, TooManyRuns
from larkbot.web.service import WebService
from larkbot.web.sse import parse_event_id, stream_run

WEB_KEY = web.AppKey("larkbot_web", WebService)
MAX_BODY = 256 * 1024


def error(status: int, msg: str, **extra: Any) -> web.Response:
    """A JSON error body."""
    return web.json_response({"msg": msg, **extra}, status=status)


async def json_body(request: web.Request) -> dict[str, Any] | web.Response:
    """The request's JSON object, or a 4xx response saying what is wrong."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        return error(413, "body too large")
    try:
        raw = await request.content.read(MAX_BODY + 1)
    except ValueError:
        return error(400, "unreadable body")
    if len(raw) > MAX_BODY:
        return error(413, "body too large")
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        return error(400, "the body must be JSON")
    return body if isinstance(body, dict) else error(400, "the body must be a JSON object")


def service(request: web.Request) -> WebService | web.Response:
    """The started web service, or 503 while starting or draining."""
    svc = request.app[WEB_KEY]
    return svc if svc.ready else error(503, "not ready")


async def handle_login(request: web.Request) -> web.Response:
    """`{"token": "…"}` → 200 and an HttpOnly, SameSite=Strict cookie; 401, later when guessing."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    assert svc.auth is not None
    client = svc.limiter.client(request.remote, request.headers.getall("X-Forwarded-For", []))
    body = await json_body(request)
    if isinstance(body, web.Response):
        return body
    token = body.get("token")
    if not isinstance(token, str) or not await svc.auth.token_ok(token):
        svc.limiter.failed(client)
        await asyncio.sleep(svc.limiter.delay(client))  # slows guessing, refuses no one
        return error(401, "wrong token")
    svc.limiter.succeeded(client)
    resp = web.json_response({"ok": True})
    resp.set_cookie(
        COOKIE_NAME,
        await svc.auth.make_cookie(),
        max_age=COOKIE_SECONDS,
        httponly=True,
        samesite="Strict",
        secure=request.secure or request.headers.get("X-Forwarded-Proto") == "https",
        path="/",
    )
    return resp


async def handle_logout(request: web.Request) -> web.Response:
    """Forget the cookie in this browser."""
    resp = web.json_response({"ok": True})
    resp.del_cookie(COOKIE_NAME, path="/")
    return resp


async def handle_chat(request: web.Request) -> web.StreamResponse:
    """Start a turn (or resume one with Last-Event-ID) and stream its AG-UI events.

    The body is larkbot's `{"message", "session_id"}` or AG-UI's RunAgentInput (chat_request.py).
    """
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    resume = request.headers.get("Last-Event-ID")
    if resume:
        parsed = parse_event_id(resume)
        run = svc.runs.get(parsed[0]) if parsed else None
        if parsed is None or run is None:
            return error(404, "unknown run (it ended long ago or ran on another replica)")
        try:
            run.after(parsed[1])
        except EventsLost as err:
            return error(410, str(err))
        return await stream_run(request, run, parsed[1], svc.ping_seconds)
    body = await json_body(request)
    if isinstance(body, web.Response):
        return body
    try:
        chat = parse_chat(body)
    except BadChat as err:
        return error(err.status, str(err))
    if svc.runs.by_session(chat.session_id) is not None:
        return error(409, "a turn is running in this session; wait for it or stop it")
    try:
        run = svc.start_turn(chat)
    except TooManyRuns as err:
        return error(429, str(err))
    except RunIdTaken as err:
        return error(409, str(err))
    return await stream_run(request, run, 0, svc.ping_seconds)


async def handle_stop(request: web.Request) -> web.Response:
    """Stop a running turn (the page's stop button); what it did so far is kept."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    if await svc.runs.stop(request.match_info["run_id"]):
        return web.json_response({"ok": True})
    return error(404, "no such running turn on this replica")


INLINE = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


async def handle_file(request: web.Request) -> web.StreamResponse:
    """A file a tool of this run produced (screenshots shown inline, anything else downloaded)."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    run = svc.runs.get(request.match_info["run_id"])
    index = request.match_info["index"]
    if run is None or not is_number(index) or int(index) >= len(run.attachments):
        return error(404, "no such file (runs are kept for a while on the replica that ran them)")
    att = run.attachments[int(index)]
    if not Path(att.path).is_file():
        return error(404, "the file is gone")
    guessed = att.mime if att.mime in INLINE else mimetypes.guess_type(att.path)[0]
    mime = guessed if guessed in INLINE else "application/octet-stream"
    how = "inline" if mime in INLINE else "attachment"
    name = Path(att.path).name.replace('"', "")
    headers = {"Content-Type": mime, "Content-Disposition": f'{how}; filename="{name}"'}
    return web.FileResponse(att.path, headers=headers)


async def handle_consent(request: web.Request) -> web.Response:
    """`{"decision": allow_once | allow_session | deny}` → 200; 404 unknown; 409 answered."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    assert svc.board is not None
    body = await json_body(request)
    if isinstance(body, web.Response):
        return body
    decision = body.get("decision")
    if decision not in ANSWERS:
        return error(400, f"`decision` must be one of {', '.join(ANSWERS)}")
    outcome = await svc.board.answer(request.match_info["request_id"], str(decision))
    if outcome == "unknown":
        return error(404, "unknown consent request")
    if outcome == "answered":
        return error(409, "already answered (or expired)")
    return web.json_response({"ok": True, "decision": decision})
