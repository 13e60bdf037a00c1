"""Parts of `serve`'s composition root that concern the Lark client: opening it with the month's
ledger, `/status`, and short notices outside turns (`App._build` calls these)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack

from larkbot.lark.api.budget import CallLedger
from larkbot.lark.api.budget_wiring import share_budget, status_line
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.render import reply_uuid, text_content
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.attachments import LarkFilePoster
from larkbot.lark.owners import Owners
from larkbot.lark.turns.commands import Status
from larkbot.lark.turns.fairness import Notify
from larkbot.logs import get_logger
from larkbot.misconfig import lark_credentials
from larkbot.model_status import status_text
from larkbot.runtime_factory import Core

log = get_logger("larkbot.app")


def status_with(core: Core, ledger: CallLedger | None, budget: Callable[[], int]) -> Status:
    """/status: the model's lines, then the month's Lark API use."""

    async def status(session_id: str) -> str:
        text = await status_text(core.live.get(), core.provider, core.usage, session_id)
        return text if ledger is None else f"{text}\n{status_line(ledger, budget())}"

    return status


async def open_lark_client(
    core: Core, owners: Owners, stack: AsyncExitStack, budget: Callable[[], int]
) -> tuple[LarkClient | None, str, CallLedger | None]:
    """The Lark client, the bot's own open_id ("" when unknown) and the month's ledger."""
    lark = core.settings.lark
    missing = lark_credentials(core.settings)
    if missing is not None:  # one warning, one fix: webhook auth and /claim do not apply yet
        log.warning("lark_not_configured", problem=missing.problem, hint=missing.fix)
        return None, "", None
    client = LarkClient.from_config(core.http, lark)
    core.runtime.posters["lark"] = LarkFilePoster(client)  # send_file posts during the call
    ledger = await share_budget(client, core.db, budget, owners)
    stack.push_async_callback(ledger.close)
    try:  # from the shared cache when another replica or an earlier run fetched it
        info = await client.bot_info()
        return client, str(info.get("open_id", "")), ledger
    except Exception as err:  # mention detection needs it; DMs work without
        log.error(
            "lark_bot_info_failed",
            error=f"{type(err).__name__}: {err}",
            hint="check lark.app_id/app_secret and that the bot capability is enabled; "
            "group @-mentions are not recognised until this works (restart to retry)",
        )
        return client, "", ledger


def notify_with(client: LarkClient) -> Notify:
    """A short text reply outside any turn (e.g. why a message is not answered)."""

    async def notify(msg: InboundMessage, text: str) -> None:
        await client.reply(
            msg.message_id,
            "text",
            text_content(text),
            uuid=reply_uuid(msg.message_id, "notice"),
            reply_in_thread=bool(msg.thread_id),
            chat_id=msg.chat_id,
        )

    return notify
