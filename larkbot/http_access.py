"""Every route of `serve` is closed unless its handler is marked: one aiohttp middleware decides.

`public` handlers (Lark's callbacks, which check their own signatures; /healthz, /readyz and
/metrics, for the operator) run untouched. Every other route goes through the check the web
channel installs (`CHECK_KEY`, see larkbot/web/security.py), which lets the page, its files
and /api/login through with their own rules and asks the rest for the web token; without the
web channel there is nobody to log in, so such a route answers 401. A route added tomorrow
without a thought is therefore closed, not open. An unknown path or method still gets
aiohttp's own 404/405. On the webhook's path the gate costs one attribute look-up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Check = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]
H = TypeVar("H", bound=Handler)

ACCESS = "larkbot_access"  # the handler attribute naming its access kind
OPEN = "open"  # answers anyone, as it is
CHECK_KEY: web.AppKey[Check] = web.AppKey("larkbot_access_check")


def mark(handler: H, kind: str) -> H:
    """`handler` marked with an access kind the installed check knows (e.g. the web page)."""
    handler.__dict__[ACCESS] = kind
    return handler


def public(handler: H) -> H:
    """`handler` open to anyone: it authenticates its callers itself, or has nothing to hide."""
    return mark(handler, OPEN)


def access_of(request: web.Request) -> str | None:
    """The access kind of the route `request` matched (None: it needs a credential)."""
    return getattr(request.match_info.handler, ACCESS, None)


def refused() -> web.Response:
    """The 401 of a route nobody can log in to."""
    return web.json_response({"msg": "log in: a web token (Bearer) is needed"}, status=401)


@web.middleware
async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Open routes and aiohttp's 404/405 pass; the rest face the installed check, else 401."""
    match = request.match_info
    if getattr(match.handler, ACCESS, None) == OPEN or match.http_exception is not None:
        return await handler(request)
    check = request.app.get(CHECK_KEY)
    if check is None:
        return refused()
    return await check(request, handler)
