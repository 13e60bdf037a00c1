"""The app against the scope manifest, for `larkbot doctor` and `/readyz`.

Each scope, event or callback the enabled features need but the app lacks is named with what
breaks without it; with the long connection, more clients online than `lark.replicas` means
some events go to a process this deployment does not run (Lark gives each to one client).
"""

from __future__ import annotations

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.lark.api.app_info import AppInfo, fetch_app_info, online_connections
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.transport import RetryPolicy
from larkbot.scopes import enabled

FIX = "run `larkbot setup` (it asks only for what is missing), or add it in the console"


def _lines(settings: Settings, info: AppInfo) -> list[CheckResult]:
    needs = enabled(settings)
    found = [
        CheckResult(f"{n.kind} {n.name}", False, f"not granted: without it {n.without}", FIX)
        for n in info.missing(needs)
    ]
    if not info.published:
        found.append(
            CheckResult(
                "lark_version",
                False,
                "no version of the app is published: scopes and events are not in effect",
                "developer console → Version Management & Release → Create a version",
            )
        )
    if not found:
        found.append(CheckResult("lark_scopes", True, f"all {len(needs)} entries granted"))
    return found


def _connections(settings: Settings, count: int) -> CheckResult:
    replicas = settings.lark.replicas
    if count > replicas:
        return CheckResult(
            "long_connections",
            False,
            f"{count} long connections online for this app but lark.replicas is {replicas}: "
            "Lark hands each event to one of them, so some go to a process you do not run",
            "stop the other clients on these credentials (another larkbot, a test run, a "
            "script), or set lark.replicas to the number of serve processes you run",
        )
    return CheckResult("long_connections", True, f"{count} online (lark.replicas {replicas})")


async def check_scopes(settings: Settings, http: httpx.AsyncClient) -> list[CheckResult]:
    """Scopes, events and callbacks the app lacks; a published version; long connections."""
    if not settings.lark.configured:
        return []  # the lark line already says so
    client = LarkClient.from_config(
        http, settings.lark, retry=RetryPolicy(attempts=2, timeout=10.0)
    )
    try:
        info = await fetch_app_info(client, settings.lark.app_id)
    except LarkAPIError as err:
        return [
            CheckResult(
                "lark_scopes",
                False,
                f"cannot read the app's scopes: {err}",
                "grant application:application:self_manage: " + FIX,
            )
        ]
    found = _lines(settings, info)
    if settings.lark.mode == "websocket":
        try:
            found.append(_connections(settings, await online_connections(client)))
        except LarkAPIError as err:
            found.append(CheckResult("long_connections", False, f"cannot count them: {err}"))
    return found
