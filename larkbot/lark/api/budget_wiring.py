"""How `serve` connects the Lark client to the month's ledger, the shared cache and the owners."""

from __future__ import annotations

from collections.abc import Callable

from larkbot.lark.api.budget import NOTICE_AT, CallLedger, Notice, describe
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.shared_cache import SharedCache
from larkbot.lark.api.spending import Plan, plan_for
from larkbot.lark.owners import Owners
from larkbot.logs import get_logger
from larkbot.storage.db import Database

log = get_logger("larkbot.lark.api.budget_wiring")


def notice_text(month: str, used: int, budget: int) -> str:
    """The one DM owners get when the month's calls pass NOTICE_AT of the budget."""
    return (
        f"Heads-up: this bot has used {used:,} of its {budget:,} Lark API calls for {month} "
        f"({used / budget:.0%}, notice at {NOTICE_AT:.0%}). To stay within it, live progress "
        "cards now update less often, then answers come as one final card, then as plain "
        "replies. If your Lark/Feishu plan allows more, raise lark.monthly_call_budget "
        "(0 = unlimited). /status shows the month's use."
    )


def owner_notice(client: LarkClient, owners: Owners) -> Notice:
    """A Notice that DMs every owner (each send idempotent per month and owner)."""

    async def notify(month: str, used: int, budget: int) -> None:
        text = notice_text(month, used, budget)
        for entry in await owners.all():
            try:
                await client.send(
                    entry.open_id,
                    "text",
                    {"text": text},
                    receive_id_type="open_id",
                    uuid=f"budget-notice:{month}:{entry.open_id}",
                )
            except Exception:
                log.warning("lark_budget_notice_send_failed", owner=entry.open_id, exc_info=True)

    return notify


async def share_budget(
    client: LarkClient, db: Database, budget: Callable[[], int], owners: Owners
) -> CallLedger:
    """Count the client's calls in a started ledger; cache its token and bot info in `db`."""
    cache = SharedCache(db)
    await cache.init()
    ledger = CallLedger(db, budget, owner_notice(client, owners))
    await ledger.init()
    client.share(cache, ledger.record)
    return ledger


def planner(ledger: CallLedger, budget: Callable[[], int]) -> Callable[[], Plan]:
    """The spending plan for the next answer (no database query: the ledger's running total)."""
    return lambda: plan_for(ledger.used(), budget())


def status_line(ledger: CallLedger, budget: int) -> str:
    """The /status line about the month's Lark API use."""
    return describe(ledger.used(), budget)
