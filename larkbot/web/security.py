"""The web's check, before any handler: token or cookie, same-origin writes, strict headers.

`serve`'s one middleware (larkbot/http_access.py) hands every route not marked open to
`web_guard`, which `mount_web` installs. Fail closed: a route is let through without a
credential only when marked `PAGE` (the page and its files) or `LOGIN` (`/api/login`); every
other one (`/chat`, `/api/*`, and any route added later) needs `Authorization: Bearer <token>`
or the login cookie, else 401. A state-changing request carrying the cookie must come from this
origin (`Origin` equal to the request's host), else 403: with no CORS headers anywhere, other
sites cannot read our answers, and SameSite=Strict plus this check stop them writing. The page
gets a strict Content-Security-Policy: scripts only from our own files, nothing inline.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from larkbot.http_access import Handler, access_of
from larkbot.web.auth import COOKIE_NAME
from larkbot.web.handlers import WEB_KEY, error

PAGE = "web_page"  # the page and its static files: public, served with PAGE_HEADERS
LOGIN = "web_login"  # /api/login: public, but only from this origin when a browser says one
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def same_origin(request: web.Request) -> bool:
    """`Origin` names this host (browsers send it on every cross-origin or POST fetch)."""
    origin = request.headers.get("Origin")
    if not origin or origin == "null":
        return False
    return urlsplit(origin).netloc.lower() == request.host.lower()


async def credential(request: web.Request) -> str | None:
    """'bearer' or 'cookie' for a valid credential, else None."""
    auth = request.app[WEB_KEY].auth
    if auth is None:
        return None
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, token = header.partition(" ")
        ok = scheme.lower() == "bearer" and await auth.token_ok(token.strip())
        return "bearer" if ok else None  # a wrong header is not rescued by a cookie
    cookie = request.cookies.get(COOKIE_NAME)
    if cookie and await auth.cookie_ok(cookie):
        return "cookie"
    return None


async def web_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """401 without a valid credential, 403 for a cross-origin write; headers on the page."""
    kind = access_of(request)
    if kind is None:
        how = await credential(request)
        if how is None:
            return error(401, "log in: a web token (Bearer) or the session cookie is needed")
        if request.method in WRITES and how == "cookie" and not same_origin(request):
            return error(403, "cross-origin request refused")
    elif kind == LOGIN and "Origin" in request.headers and not same_origin(request):
        return error(403, "cross-origin request refused")
    resp = await handler(request)
    for key, value in PAGE_HEADERS.items():
        resp.headers.setdefault(key, value)
    return resp
