"""The web interface of `serve`: the chat page at `/`, `/chat` as AG-UI over SSE, `/api/*`.

`mount_web` adds the routes and the guard to the aiohttp application; the WebService starts
with the application (after the App's core exists) and drains before it closes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from larkbot.web import data_api, memory_api
from larkbot.web.handlers import (
    WEB_KEY,
    handle_chat,
    handle_consent,
    handle_file,
    handle_login,
    handle_logout,
    handle_stop,
)
from larkbot.web.security import guard
from larkbot.web.service import WebService

if TYPE_CHECKING:
    from larkbot.app import App

STATIC = Path(__file__).parent / "static"
_STATIC_ROOT = STATIC.resolve()  # what a requested file must resolve inside


async def handle_page(request: web.Request) -> web.FileResponse:
    """The single static page."""
    return web.FileResponse(STATIC / "index.html")


def _static_file(name: str) -> Path | None:
    """The file `name` names under STATIC, or None (missing, a directory, or outside it)."""
    path = (_STATIC_ROOT / name).resolve()
    return path if path.is_relative_to(_STATIC_ROOT) and path.is_file() else None


async def handle_static(request: web.Request) -> web.FileResponse:
    """The page's scripts and styles (nothing outside STATIC, however the name is spelled)."""
    path = await asyncio.to_thread(_static_file, request.match_info["name"])
    if path is None:
        raise web.HTTPNotFound()
    return web.FileResponse(path)


def mount_web(web_app: web.Application, app: App, ping_seconds: float = 15.0) -> WebService:
    """Add the web routes and guard; start/stop the WebService with the application."""
    svc = WebService(app, ping_seconds=ping_seconds)
    web_app[WEB_KEY] = svc
    routes = [
        ("GET", "/", handle_page),
        ("GET", "/static/{name:.+}", handle_static),
        ("POST", "/api/login", handle_login),
        ("POST", "/api/logout", handle_logout),
        ("POST", "/chat", handle_chat),
        ("POST", "/api/runs/{run_id}/stop", handle_stop),
        ("GET", "/api/runs/{run_id}/files/{index}", handle_file),
        ("POST", "/api/consent/{request_id}", handle_consent),
        ("GET", "/api/sessions", data_api.list_sessions),
        ("GET", "/api/sessions/{session_id}", data_api.get_session),
        ("DELETE", "/api/sessions/{session_id}", data_api.delete_session),
        ("GET", "/api/schedules", data_api.list_schedules),
        ("DELETE", "/api/schedules/{job_id}", data_api.delete_schedule),
        ("GET", "/api/schedules/{job_id}/runs", data_api.schedule_runs),
        ("GET", "/api/memory", memory_api.list_memories),
    ]
    for method, path, handler in routes:
        if method == "GET":  # with HEAD, as add_get does
            web_app.router.add_get(path, guard(handler))
        else:
            web_app.router.add_route(method, path, guard(handler))

    async def on_startup(_: web.Application) -> None:
        await svc.start()

    async def on_shutdown(_: web.Application) -> None:
        # before aiohttp waits for open handlers: ending the runs ends their streams
        await svc.stop(app.settings.server.drain_seconds)

    web_app.on_startup.append(on_startup)
    web_app.on_shutdown.append(on_shutdown)
    return svc
