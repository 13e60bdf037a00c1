"""The bot menu (`application.bot.menu_v6`): a click is answered to that person in their DM.

`lark.menu` maps a menu item's `event_key` (set in the console, push-event type) to a chat
command (`/new`, `/auth`, `/help`) or a prompt; its entries are added to `DEFAULT_MENU`. The
event carries no chat: the bot posts a short line naming the entry in the person's DM, and that
line becomes a DM message from the person, accepted by the dispatcher like any other (journal
claim, chat policy, owner check), so a menu click can do nothing a typed message could not.
A redelivered event posts the same line (its `uuid`), which the journal then drops.
Lark calls: 1 (the line) + the turn's own replies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from larkbot.lark.api.client import MESSAGES, LarkClient, as_object, idempotency_key, to_content
from larkbot.lark.api.render import text_content
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.turns.dispatcher import Dispatcher
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.events.menu")
MENU_EVENT = "application.bot.menu_v6"
TASKS_PROMPT = "List my scheduled tasks (schedule_list): what each does and when it runs next."
DEFAULT_MENU: dict[str, str] = {
    "new": "/new",  # new conversation
    "tasks": TASKS_PROMPT,  # my scheduled tasks
    "auth": "/auth",  # authorize my Lark account
    "help": "/help",
}
LABEL_CHARS = 60


def entries(configured: dict[str, str]) -> dict[str, str]:
    """The menu in effect: the defaults, with `lark.menu` added or replacing them."""
    return {**DEFAULT_MENU, **{k: v for k, v in configured.items() if v.strip()}}


def label(entry: str) -> str:
    """The DM line that stands for the click: the command, or the prompt's start."""
    short = entry if len(entry) <= LABEL_CHARS else entry[: LABEL_CHARS - 1] + "…"
    return f"🔘 {short}"


class BotMenu:
    """Answers menu clicks through the dispatcher as the clicker's own DM message."""

    def __init__(
        self, client: LarkClient, dispatcher: Dispatcher, menu: Callable[[], dict[str, str]]
    ) -> None:
        self.client = client
        self.dispatcher = dispatcher
        self.menu = menu  # the configured `lark.menu`, read at each click

    async def handle(self, envelope: dict[str, Any], signed: bool) -> str:
        """Post the line in the clicker's DM and hand it to the dispatcher; the outcome."""
        event, header = as_object(envelope.get("event")), as_object(envelope.get("header"))
        operator = as_object(as_object(event.get("operator")).get("operator_id"))
        open_id, key = str(operator.get("open_id") or ""), str(event.get("event_key") or "")
        event_id = str(header.get("event_id") or "")
        entry = entries(self.menu()).get(key)
        if not open_id or not event_id:
            return "ignored"
        if entry is None:
            log.info("lark_menu_unknown", event_key=key[:64])
            return "ignored"
        sent, chat_id = await self._post_line(open_id, label(entry), f"menu-{event_id}")
        if not chat_id:
            log.warning("lark_menu_no_chat", event_key=key[:64])
            return "ignored"
        msg = InboundMessage(
            message_id=sent,
            chat_id=chat_id,
            chat_type="p2p",
            sender_open_id=open_id,
            text=entry,
            event_id=event_id,
            signed=signed,
        )
        return await self.dispatcher.accept(msg)

    async def _post_line(self, open_id: str, text: str, uuid: str) -> tuple[str, str]:
        """Send the line to the person's DM: (message_id, the DM's chat_id), in one call."""
        body = {
            "receive_id": open_id,
            "msg_type": "text",
            "content": to_content(text_content(text)),
            "uuid": idempotency_key(uuid),
        }
        resp = await self.client.transport.request(
            "POST",
            MESSAGES,
            params={"receive_id_type": "open_id"},
            json=body,
            chat=open_id,
            idempotent=True,
        )
        data = as_object(resp.get("data"))
        return str(data.get("message_id") or ""), str(data.get("chat_id") or "")
