"""`/readyz`'s `lark_app` line: what the app lacks of the scope manifest, and extra long
connections. A warning, never a failure: a missing optional scope must not take the replica
out of a load balancer."""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

from larkbot.config import Settings
from larkbot.lark.api.app_info import fetch_app_info, online_connections
from larkbot.scopes import enabled

# /readyz is polled every few seconds and every Lark call counts against the monthly quota
# (lark.monthly_call_budget): Lark is asked once per 6 h (~240 calls a month); doctor, always.
READYZ_SECONDS = 6 * 3600.0
RETRY_SECONDS = 60.0  # after a failed look (a timeout, Lark down)
# per Lark client (one per running App): (asked again after, detail)
_seen: weakref.WeakKeyDictionary[Any, tuple[float, str]] = weakref.WeakKeyDictionary()


async def _detail(app: Any) -> str:
    settings: Settings = app.settings
    info = await fetch_app_info(app.client, settings.lark.app_id)
    problems = [f"{n.kind} {n.name} missing: {n.without}" for n in info.missing(enabled(settings))]
    if not info.published:
        problems.append("no published version")
    if settings.lark.mode == "websocket":
        count, replicas = await online_connections(app.client), settings.lark.replicas
        if count > replicas:
            problems.append(f"{count} long connections online for lark.replicas {replicas}")
    return "; ".join(problems) or "every needed scope, event and callback granted"


async def lark_app_line(app: Any, timeout: float) -> dict[str, Any]:
    """`{"ok": True, "detail": …}`, from Lark at most once per READYZ_SECONDS."""
    key = app.client
    seen = _seen.get(key)
    if seen is not None and time.monotonic() < seen[0]:
        return {"ok": True, "detail": seen[1]}
    keep = READYZ_SECONDS
    try:
        async with asyncio.timeout(timeout):
            detail = await _detail(app)
    except asyncio.CancelledError:
        raise
    except Exception as err:
        detail = f"cannot read the app's scopes: {type(err).__name__}: {err}"[:300]
        keep = RETRY_SECONDS
    _seen[key] = (time.monotonic() + keep, detail)
    return {"ok": True, "detail": detail}
