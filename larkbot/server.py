"""`larkbot serve`: the aiohttp service (Lark events and cards, /healthz, /readyz, /metrics)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from aiohttp import web

from larkbot import start_screen
from larkbot.app import App, NotAccepting
from larkbot.config import Settings
from larkbot.health import liveness, metrics_text, readiness
from larkbot.heap import freeze_startup_heap
from larkbot.http_access import gate, public
from larkbot.http_guard import BodyBudget, GuardedSite, connection_cap
from larkbot.lark.arrival.card_v1 import V1_EVENT_TYPE, v1_answer
from larkbot.lark.arrival.webhook import (
    MAX_BODY_BYTES,
    UNAUTHENTICATED,
    verify_card_request,
    verify_event_request,
)
from larkbot.logs import configure_logging, get_logger
from larkbot.misconfig import find_problems
from larkbot.policy.secrets import SecretScrubber, make_undumpable
from larkbot.preflight import check_port, check_writable, port_error
from larkbot.stop_signals import StopSignals

log = get_logger("larkbot.server")
APP_KEY = web.AppKey("larkbot_app", App)
BUDGET_KEY = web.AppKey("larkbot_unverified_bodies", BodyBudget)


class BodyTooLarge(Exception):
    """The request body is over the 1 MB cap."""


class TooManyBodies(Exception):
    """Unverified bodies already hold their whole memory budget (server.unverified_body_bytes)."""


async def read_capped(
    request: web.Request,
    limit: int = MAX_BODY_BYTES,
    within: float = 10.0,
    budget: BodyBudget | None = None,
) -> bytes:
    """The raw body, refusing (early, by Content-Length when given) anything over `limit`.

    With a `budget`, the bytes read count against it until this returns or fails: callers
    verify the body at once, so unauthenticated senders together hold at most the budget.
    """
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge
    budget = budget or BodyBudget(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(within):  # a trickling sender must not hold a handler
            while chunk := await request.content.readany():
                if size + len(chunk) > limit:
                    raise BodyTooLarge
                if not budget.take(len(chunk)):
                    raise TooManyBodies
                size += len(chunk)
                chunks.append(chunk)
        return b"".join(chunks)
    finally:
        budget.give(size)


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(body, status=status)


async def _authenticated(request: web.Request, card: bool) -> tuple[App, Any] | web.Response:
    app = request.app[APP_KEY]
    if not app.ready:
        return _json({"msg": "not ready"}, 503)
    try:
        within = app.settings.server.body_read_seconds
        raw = await read_capped(request, within=within, budget=request.app[BUDGET_KEY])
    except BodyTooLarge:
        return _json({"msg": "body too large"}, 413)
    except TooManyBodies:
        log.warning("unverified_body_budget_full")
        return _json({"msg": "busy"}, 503)
    except TimeoutError:
        return _json({"msg": "request body too slow"}, 408)
    verify = verify_card_request if card else verify_event_request
    outcome = verify(raw, request.headers, app.settings.lark, time.time())
    if outcome.status != 200 or outcome.envelope is None:
        if outcome.reason == UNAUTHENTICATED:  # our set-up, not the sender, is wrong
            log.warning("lark_request_refused", status=outcome.status, reason=outcome.reason)
        elif outcome.status >= 400:
            log.info("lark_request_refused", status=outcome.status, reason=outcome.reason)
        return _json(outcome.body, outcome.status)
    return app, outcome


async def handle_events(request: web.Request) -> web.Response:
    """Verify, then hand the event off and answer 200 at once (the turn runs in the background)."""
    checked = await _authenticated(request, card=False)
    if isinstance(checked, web.Response):
        return checked
    app, outcome = checked
    try:
        result = await app.submit(outcome.envelope, signed=outcome.signed)
    except asyncio.CancelledError:
        raise
    except NotAccepting:  # draining: Lark redelivers (to another replica or after restart)
        return _json({"msg": "not ready"}, 503)
    except Exception:
        # Our side failed (e.g. storage): a 503 makes Lark redeliver later instead of losing it.
        log.error("lark_submit_failed", event_id=outcome.event_id, exc_info=True)
        return _json({"msg": "temporarily unavailable"}, 503)
    log.debug("lark_event", event_id=outcome.event_id, type=outcome.event_type, result=result)
    return _json(outcome.body)


async def handle_card(request: web.Request) -> web.Response:
    """Card callbacks: verified like events, answered by the installed card handler (default {})."""
    checked = await _authenticated(request, card=True)
    if isinstance(checked, web.Response):
        return checked
    app, outcome = checked
    try:
        answer = await app.handle_card(outcome.envelope, signed=outcome.signed)
        return _json(v1_answer(answer) if outcome.event_type == V1_EVENT_TYPE else answer)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.error("lark_card_action_failed", event_id=outcome.event_id, exc_info=True)
        return _json({"toast": {"type": "error", "content": "Something went wrong."}})


async def handle_health(request: web.Request) -> web.Response:
    """200 once events can be taken and answered; 503 (with the reason) otherwise."""
    app = request.app[APP_KEY]
    if request.query.get("verbose"):
        status, body = await readiness(app)
    else:
        status, body = await liveness(app)
    return _json(body, status)


async def handle_ready(request: web.Request) -> web.Response:
    """Each component's state (storage, Lark token, long connection, LLM, scheduler, config)."""
    status, body = await readiness(request.app[APP_KEY])
    return _json(body, status)


async def handle_metrics(request: web.Request) -> web.Response:
    """Prometheus text format."""
    text, content_type = await metrics_text(request.app[APP_KEY])
    resp = web.Response(body=text)
    resp.headers["Content-Type"] = content_type
    return resp


def create_app(app: App) -> web.Application:
    """The aiohttp application serving `app` (body size is capped by `read_capped`); a route
    not marked `public` is closed (larkbot/http_access.py)."""
    web_app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[gate])
    web_app[APP_KEY] = app
    web_app[BUDGET_KEY] = BodyBudget(app.settings.server.unverified_body_bytes)
    # open: Lark's callbacks verify their own signatures; the rest is for the operator
    web_app.router.add_post("/lark/events", public(handle_events))
    web_app.router.add_post("/lark/card", public(handle_card))
    web_app.router.add_get("/healthz", public(handle_health))
    web_app.router.add_get("/readyz", public(handle_ready))
    web_app.router.add_get("/metrics", public(handle_metrics))
    if app.settings.web.enabled:
        from larkbot.setup.web_flow import WebSetup
        from larkbot.web import mount_web

        mount_web(web_app, app, setup=WebSetup(app))
    return web_app


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> int:
    """Run until `stop` is set (SIGTERM/SIGINT), then drain in-flight turns and close."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = StopSignals(stop, settings.server.drain_seconds)
    signals.install(loop)  # a second Ctrl-C exits at once
    host, port = settings.server.host, settings.server.port
    check_writable(settings)
    check_port(host, port)  # before anything starts: a busy port is one screen, not a traceback
    app = App(settings)
    try:
        await app.start()
    except Exception as err:
        log.error("start_failed", error=f"{type(err).__name__}: {err}", exc_info=True)
        return 1
    await warn_misconfiguration(app)
    try:
        runner, site = await open_site(app, host, port)
    except BaseException as err:
        await app.stop()
        if isinstance(err, OSError):  # taken between the check and now
            raise port_error(host, port, err) from None
        raise
    try:
        frozen = freeze_startup_heap()  # once everything is imported and started (see heap.py)
        assert site.guard is not None
        log.info(
            "serving",
            host=host,
            port=site.port,
            max_connections=site.guard.cap,
            frozen_objects=frozen,
        )
        screen = sys.stderr.isatty() and settings.logging.format != "json"  # for a person
        await start_screen.announce(app, runner, host, site.port, screen)
        await stop.wait()
        signals.bound_shutdown(loop)
        log.info("draining", seconds=settings.server.drain_seconds)
        drained = await app.drain(settings.server.drain_seconds)
        log.info("drained", complete=drained)
    finally:
        await runner.cleanup()
        await app.stop()
    signals.done()
    return 0


async def open_site(app: App, host: str, port: int) -> tuple[web.AppRunner, GuardedSite]:
    """`app` served as `larkbot serve` serves it (its runner and guarded site), listening."""
    cfg = app.settings.server
    runner = web.AppRunner(
        create_app(app),
        access_log=None,
        handle_signals=False,
        keepalive_timeout=cfg.idle_timeout_seconds,
    )
    await runner.setup()
    limits = {
        "cap": connection_cap(cfg.max_connections),
        "header_timeout": cfg.header_timeout_seconds,
    }
    site = GuardedSite(runner, host, port, limits)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, site


async def warn_misconfiguration(app: App) -> None:
    """One warning per set-up mistake, at start, in words the operator can act on."""
    for problem in find_problems(app.settings, await app.owners.has_owner()):
        if problem.key in ("lark_credentials", "webhook_unsigned"):
            continue  # App.start already warned (lark_not_configured, lark_events_unsigned)
        log.warning("misconfigured", problem=problem.problem, fix=problem.fix, key=problem.key)


def run_serve(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot serve`."""
    fmt = settings.logging.format
    if fmt == "auto":  # people read a terminal; a pipe (Docker, systemd) gets JSON lines
        fmt = "console" if sys.stderr.isatty() else "json"
    configure_logging(settings.logging.level, fmt, SecretScrubber(lambda: settings).text)
    make_undumpable()  # a tool's child process cannot read our environment (the keys)
    return asyncio.run(serve(settings))
