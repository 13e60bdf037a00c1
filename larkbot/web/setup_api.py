"""`POST /api/setup/start` and `GET /api/setup/status`: `larkbot setup` from the web page.

The page shows the panel while Lark is not configured: start runs one registration in the
background (the QR code comes back as SVG), status says waiting / done / failed. The flow itself
is `serve`'s (`larkbot/setup/web_flow.py`); the web channel knows only this protocol.
"""

from __future__ import annotations

from typing import Any, Protocol

from aiohttp import web

from larkbot.web.handlers import service


class SetupFlow(Protocol):
    """One registration at a time, and what the page is told about it."""

    async def start(self) -> None:
        """Begin a registration (unless one is waiting) and wait until its QR code is known."""
        ...

    def status(self) -> dict[str, Any]:
        """configured, state (idle, waiting, done, failed), url, svg, expires_at, result, error,
        and llm: {key, problem, fix} while no answer can succeed (no key for a hosted model)."""
        ...

    async def close(self) -> None:
        """Stop a registration still waiting for its scan."""
        ...


SETUP_KEY = web.AppKey("larkbot_setup", SetupFlow)


async def start_setup(request: web.Request) -> web.Response:
    """Start (or rejoin) the registration; answers with the status, QR code included."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    if SETUP_KEY not in request.app:
        raise web.HTTPNotFound(text="setup is not available in this process")
    setup = request.app[SETUP_KEY]
    await setup.start()
    return web.json_response(setup.status())


async def setup_status(request: web.Request) -> web.Response:
    """Where the registration is: idle, waiting (QR code), done (what is left) or failed."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    if SETUP_KEY not in request.app:
        raise web.HTTPNotFound(text="setup is not available in this process")
    return web.json_response(request.app[SETUP_KEY].status())


async def close_setup(web_app: web.Application) -> None:
    """on_cleanup: cancel a registration still polling."""
    if SETUP_KEY in web_app:
        await web_app[SETUP_KEY].close()
