"""`larkbot doctor`'s Lark lines: credentials, the bot's identity, the month's API calls."""

from __future__ import annotations

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.lark.api.budget import CallLedger, describe
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.spending import plan_for
from larkbot.lark.api.transport import RetryPolicy
from larkbot.misconfig import lark_credentials
from larkbot.storage.db import Database


def _fix(err: LarkAPIError, domain: str) -> str:
    if err.hint:
        return err.hint
    if err.http_status == 0:
        return f"cannot reach {domain}: check lark.domain and the network"
    return "check lark.app_id, lark.app_secret, lark.domain and that the bot capability is on"


async def check_lark(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """Fetch a tenant token, then GET /bot/v3/info (needed to recognise @-mentions)."""
    lark = settings.lark
    missing = lark_credentials(settings)
    if missing is not None:  # the one line for an unconnected Lark: webhook and owner stay quiet
        return CheckResult("lark", False, missing.problem, missing.fix)
    client = LarkClient.from_config(http, lark, retry=RetryPolicy(attempts=2, timeout=10.0))
    try:
        await client.token()
    except LarkAPIError as err:
        return CheckResult("lark", False, f"token fetch failed: {err}", _fix(err, lark.domain))
    try:
        bot = await client.bot_info()
    except LarkAPIError as err:
        return CheckResult(
            "lark",
            False,
            f"credentials work but bot info failed: {err}",
            "enable the bot capability (应用能力 → 机器人) and publish a version",
        )
    name, open_id = bot.get("app_name", "?"), bot.get("open_id", "?")
    return CheckResult("lark", True, f"token ok; bot {name!r} ({open_id}) at {lark.domain}")


async def check_lark_budget(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """This month's Lark API calls (every replica's, from the database) against the budget."""
    budget = settings.lark.monthly_call_budget
    db = Database(settings.storage.url)
    try:
        ledger = CallLedger(db, lambda: budget)
        await ledger.init()
        by_endpoint = await ledger.by_endpoint()
    except Exception as err:
        return CheckResult(
            "lark_budget",
            False,
            f"cannot read this month's Lark API calls: {type(err).__name__}: {err}"[:300],
            "see the storage line: the calls are counted in storage.url",
        )
    finally:
        await db.close()
    used = sum(by_endpoint.values())
    top = ", ".join(f"{endpoint_label(e)} {n:,}" for e, n in list(by_endpoint.items())[:3])
    detail = describe(used, budget) + (f"; most: {top}" if top else "")
    plan = plan_for(used, budget)
    if plan.mode != "stream":
        how = "one final card per answer" if plan.mode == "card" else "plain replies only"
        return CheckResult(
            "lark_budget",
            plan.mode == "card",
            f"{detail}; answers are now {how}",
            "raise lark.monthly_call_budget if your Lark/Feishu plan allows more (0 = unlimited)",
        )
    return CheckResult("lark_budget", True, detail)


def endpoint_label(template: str) -> str:
    """`/open-apis/im/v1/messages/:id/reply` → `im/v1/messages/:id/reply`."""
    return template.removeprefix("/open-apis/")
