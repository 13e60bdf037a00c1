"""The web interface of `serve`: the chat page at `/`, `/chat` as AG-UI over SSE, `/api/*`.

`mount_web` adds the routes and the guard to the aiohttp application; the WebService starts
with the application (after the App's core exists) and drains before it closes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from larkbot.web import data_api
from larkbot.web.handlers import (
    WEB_KEY,
    handle_chat,
    handle_consent,
    handle_file,
    handle_login,
    handle_logout,
    handle_stop,
)
from larkbot.web.security import web_guard
from larkbot.web.service import WebService

if TYPE_CHECKING:
    from larkbot.app import App

STATIC = Path(__file__).parent / "static"


async def handle_page(request: web.Request) -> web.FileResponse:
    """The single static page."""
    return web.FileResponse(STATIC / "index.html")


def mount_web(web_app: web.Application, app: App, ping_seconds: float = 15.0) -> WebService:
    """Add the web routes and guard; start/stop the WebService with the application."""
    svc = WebService(app, ping_seconds=ping_seconds)
    web_app[WEB_KEY] = svc
    web_app.middlewares.append(web_guard)
    r = web_app.router
    r.add_get("/", handle_page)
    r.add_static("/static/", STATIC, follow_symlinks=False)
    r.add_post("/api/login", handle_login)
    r.add_post("/api/logout", handle_logout)
    r.add_post("/chat", handle_chat)
    r.add_post("/api/runs/{run_id}/stop", handle_stop)
    r.add_get("/api/runs/{run_id}/files/{index}", handle_file)
    r.add_post("/api/consent/{request_id}", handle_consent)
    r.add_get("/api/sessions", data_api.list_sessions)
    r.add_get("/api/sessions/{session_id}", data_api.get_session)
    r.add_delete("/api/sessions/{session_id}", data_api.delete_session)
    r.add_get("/api/schedules", data_api.list_schedules)
    r.add_delete("/api/schedules/{job_id}", data_api.delete_schedule)
    r.add_get("/api/schedules/{job_id}/runs", data_api.schedule_runs)

    async def on_startup(_: web.Application) -> None:
        await svc.start()

    async def on_shutdown(_: web.Application) -> None:
        # before aiohttp waits for open handlers: ending the runs ends their streams
        await svc.stop(app.settings.server.drain_seconds)

    web_app.on_startup.append(on_startup)
    web_app.on_shutdown.append(on_shutdown)
    return svc
