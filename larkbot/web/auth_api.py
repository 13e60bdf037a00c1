"""GET /api/auth: whose Lark authorizations the bot holds (names, scopes, expiry; no token)."""

from __future__ import annotations

from aiohttp import web

from larkbot.web.handlers import service


async def list_authorizations(request: web.Request) -> web.Response:
    """Every person's grant for this app, for the owner's account view."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    store = svc.tokens
    assert store is not None  # service() answered 503 until the web started
    grants = [
        {
            "open_id": g.open_id,
            "name": g.name,
            "scopes": list(g.scopes),
            "access_expires_at": g.access_expires_at,
            "refresh_expires_at": g.refresh_expires_at,
            "granted_at": g.granted_at,
        }
        for g in await store.all()
    ]
    return web.json_response({"authorizations": grants})
