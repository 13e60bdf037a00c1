"""The web interface of `serve`: the chat page at `/`, `/chat` as AG-UI over SSE, `/api/*`.

`mount_web` adds the routes and installs the web's check (`security.web_guard`) in `serve`'s
one middleware, which every route not marked open goes through (larkbot/http_access.py); the
WebService starts with the application (after the host's core exists) and drains before it
closes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp import web

from larkbot.http_access import CHECK_KEY, mark
from larkbot.web import auth_api, data_api, memory_api
from larkbot.web.handlers import (
    WEB_KEY,
    handle_chat,
    handle_consent,
    handle_file,
    handle_login,
    handle_logout,
    handle_stop,
)
from larkbot.web.security import LOGIN, PAGE, web_guard
from larkbot.web.service import WebHost, WebService
from larkbot.web.setup_api import SETUP_KEY, SetupFlow, close_setup, setup_status, start_setup

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


def mount_web(
    web_app: web.Application,
    host: WebHost,
    ping_seconds: float = 15.0,
    setup: SetupFlow | None = None,
) -> WebService:
    """Add the web routes and the web's check; start/stop the WebService with the application."""
    svc = WebService(host, ping_seconds=ping_seconds)
    web_app[WEB_KEY] = svc
    web_app[CHECK_KEY] = web_guard
    if setup is not None:  # `serve` offers the one-scan registration on the first screen
        web_app[SETUP_KEY] = setup
    routes = [  # unmarked: the web token or the login cookie is needed
        ("GET", "/", mark(handle_page, PAGE)),
        ("GET", "/static/{name:.+}", mark(handle_static, PAGE)),
        ("POST", "/api/login", mark(handle_login, LOGIN)),
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
        ("POST", "/api/setup/start", start_setup),
        ("GET", "/api/setup/status", setup_status),
        ("GET", "/api/memory", memory_api.list_memories),
        ("GET", "/api/auth", auth_api.list_authorizations),
    ]
    for method, path, handler in routes:
        if method == "GET":  # with HEAD, as add_get does
            web_app.router.add_get(path, handler)
        else:
            web_app.router.add_route(method, path, handler)

    async def on_startup(_: web.Application) -> None:
        await svc.start()

    async def on_shutdown(_: web.Application) -> None:
        # before aiohttp waits for open handlers: ending the runs ends their streams
        await svc.stop(host.settings.server.drain_seconds)

    web_app.on_startup.append(on_startup)
    web_app.on_shutdown.append(on_shutdown)
    web_app.on_cleanup.append(close_setup)
    return svc
