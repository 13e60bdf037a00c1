"""What `/healthz`, `/readyz` and `/metrics` say about a running App.

`/healthz` is the probe (200 only when events can be taken *and* answered: Lark credentials
set unless the web chat is the interface, webhook authenticated, long connection up, no hosted
LLM without a key; the model itself is not called);
`/readyz` names each component's state; `/metrics` refreshes the gauges that need a query,
then renders the registry.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import sqlalchemy as sa

from larkbot import metrics
from larkbot.lark.api.errors import CredentialsRefused
from larkbot.misconfig import find_problems
from larkbot.setup.readyz import lark_app_line

PROBE_TIMEOUT = 3.0


async def liveness(app: Any) -> tuple[int, dict[str, Any]]:
    """(status, body) of `/healthz`: 200 `{"status": "ok"}` once events are taken and answered."""
    if not app.ready:
        return 503, {"status": "unavailable", "reason": "starting or draining"}
    blocking = [p.problem for p in find_problems(app.settings) if p.blocking]
    if app.client is not None and (refusal := await lark_refusal(app)):
        blocking.append(refusal)
    ws = app.ws
    if ws is not None and ws.state != "connected":
        blocking.append(f"long connection is {ws.state}")
    if blocking:
        return 503, {"status": "unavailable", "reason": "; ".join(blocking)}
    return 200, {"status": "ok"}


async def _timed(probe: Any) -> dict[str, Any]:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            detail = await probe()
    except asyncio.CancelledError:
        raise
    except Exception as err:
        return {"ok": False, "detail": f"{type(err).__name__}: {err}"[:300]}
    return {"ok": True, "detail": detail}


async def readiness(app: Any) -> tuple[int, dict[str, Any]]:
    """(status, body) of `/readyz`: each component with ok and a detail; 503 if any is not ok."""
    components: dict[str, dict[str, Any]] = {}
    if app.ready or app.started:
        components["storage"] = await _timed(lambda: _storage(app))
    else:
        components["storage"] = {"ok": False, "detail": "not started"}
    if app.client is None:
        web_only = app.settings.web.enabled
        detail = "lark credentials not set" + (": web chat only" if web_only else "")
        components["lark_token"] = {"ok": web_only, "detail": detail}
    else:
        components["lark_token"] = await _timed(lambda: _token(app))
        components["lark_app"] = await lark_app_line(app, PROBE_TIMEOUT)  # warnings only
    if app.settings.lark.mode == "websocket":
        state = app.ws.state if app.ws is not None else "not started"
        components["long_connection"] = {"ok": state == "connected", "detail": state}
    last = metrics.LLM_LAST
    components["llm"] = {
        "ok": last.ok is not False,
        "detail": "no request yet" if last.ok is None else last.describe(),
    }
    components["scheduler"] = {"ok": True, "detail": _scheduler_role(app)}
    for problem in find_problems(app.settings):
        components.setdefault("config", {"ok": True, "detail": []})
        components["config"]["detail"].append(f"{problem.problem} → {problem.fix}")
        components["config"]["ok"] &= not problem.blocking
    ok = app.ready and all(c["ok"] for c in components.values())
    body = {
        "status": "ok" if ok else "unavailable",
        "ready": ok,  # the same verdict as `status` (and the HTTP status): one answer
        "accepting": app.ready,  # events are taken (false while starting or draining)
        "components": components,
    }
    return (200 if ok else 503), body


async def _storage(app: Any) -> str:
    async with app.core.db.read() as conn:
        await conn.execute(sa.text("SELECT 1"))
    return "reachable"


TOKEN_RETRY_SECONDS = 60.0  # a probe polling /readyz must not turn into a token call per poll


async def _token(app: Any) -> str:
    transport = app.client.transport
    failed = transport.token_error
    if not transport.has_token() and failed and time.monotonic() - failed[0] < TOKEN_RETRY_SECONDS:
        raise failed[1]  # retried at most once a minute
    await app.client.token()  # held, else from the shared cache, else one fetch
    return "tenant token valid"


async def lark_refusal(app: Any) -> str:
    """Why no tenant token can be had ('' when one is held or can be fetched): the failed fetch
    is retried at most once a minute, so a probe polling /healthz costs Lark nothing more."""
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            await _token(app)
    except asyncio.CancelledError:
        raise
    except CredentialsRefused as err:
        return f"Lark refused the app's credentials: {err}"[:400]
    except Exception:
        return ""  # Lark slow or unreachable: no verdict on the credentials (see /readyz)
    return ""


def _scheduler_role(app: Any) -> str:
    if not app.started:
        return "not started"
    svc = app.core.runtime.services.get("scheduler")
    if svc is None:
        return "disabled"
    return "leader (fires jobs)" if svc.is_leader else "follower (another replica fires jobs)"


async def metrics_text(app: Any) -> tuple[bytes, str]:
    """Refresh the journal backlog, queue depth and Lark budget gauges, then render them all."""
    # Configuration, so known before Lark credentials are: left unset it would read 0 (unlimited)
    metrics.LARK_MONTH_BUDGET.set(app.settings.lark.monthly_call_budget)
    if app.ready:  # the journal exists (a dispatcher only with Lark credentials)
        dispatcher = app.parts.dispatcher
        metrics.QUEUE_DEPTH.set(dispatcher.queued if dispatcher is not None else 0)
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                metrics.JOURNAL_BACKLOG.set(await app.journal.backlog())
        except asyncio.CancelledError:
            raise
        except Exception:
            pass  # the gauge keeps its last value; /readyz says what is wrong with storage
        ledger = app.parts.ledger
        if ledger is not None:  # the running total: no query per scrape
            metrics.LARK_MONTH_CALLS.set(ledger.used())
    return metrics.render()
