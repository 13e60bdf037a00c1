"""One short welcome per chat: when the bot is added to a group or a user opens its DM.

Events `im.chat.member.bot.added_v1` and `im.chat.access_event.bot_p2p_chat_entered_v1`.
"At most once per chat" is a row in `lark_welcomed` (INSERT … ON CONFLICT DO NOTHING), so
redeliveries, reopened DMs and several replicas greet once; the send's `uuid` covers a retry.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.owners import Owners
from larkbot.lark.turns.people import Directory
from larkbot.logs import get_logger
from larkbot.storage.db import Database, metadata

log = get_logger("larkbot.lark.events.welcome")
BOT_ADDED = "im.chat.member.bot.added_v1"
P2P_ENTERED = "im.chat.access_event.bot_p2p_chat_entered_v1"
RECALLED = "im.message.recalled_v1"
WELCOME_EVENTS = frozenset({BOT_ADDED, P2P_ENTERED})

welcomed = sa.Table(
    "lark_welcomed",
    metadata,
    sa.Column("chat_id", sa.String(128), primary_key=True),
    sa.Column("at", sa.Float, nullable=False),
)


def welcome_text(owner_names: list[str], group: bool) -> str:
    """The greeting: what the bot can do, who owns it, where help is."""
    owner = ", ".join(owner_names) if owner_names else "nobody yet (see /claim)"
    ask = "@-mention me" if group else "just write"
    return (
        f"Hi! I'm an AI assistant: {ask} to ask me anything — I can search the web, read "
        f"images and files you send, and answer with cards. My owner is {owner}; only owners "
        "can make me act on their machine. Type /help for commands.\n"
        f"你好！我是 AI 助手：{'在群里 @ 我' if group else '直接发消息'}即可提问。"
        "输入 /帮助 查看命令。"
    )


class Welcomer:
    """Sends the welcome to a chat the first time one of the two events names it."""

    def __init__(self, db: Database, client: Any, owners: Owners, directory: Directory) -> None:
        self.db = db
        self.client = client
        self.owners = owners
        self.directory = directory

    async def init(self) -> None:
        """Create the table."""
        await self.db.create(welcomed)

    async def _first_time(self, chat_id: str) -> bool:
        insert = sqlite.insert if self.db.is_sqlite else postgresql.insert
        stmt = insert(welcomed).values(chat_id=chat_id, at=time.time()).on_conflict_do_nothing()
        async with self.db.engine.begin() as conn:
            return bool((await conn.execute(stmt)).rowcount == 1)

    async def greet(self, event_type: str, event: dict[str, Any]) -> bool:
        """Welcome the event's chat unless it was welcomed before; True when sent."""
        chat_id = str(event.get("chat_id") or "")
        if not chat_id or not await self._first_time(chat_id):
            return False
        names = [await self.directory.name(e.open_id) for e in await self.owners.all()]
        text = welcome_text(names, group=event_type == BOT_ADDED)
        uuid = hashlib.sha256(f"welcome#{chat_id}".encode()).hexdigest()[:40]
        try:
            await self.client.send(chat_id, "text", {"text": text}, uuid=uuid)
        except Exception as err:  # Lark's own refusal names its fix: no traceback for it
            fix = {"fix": err.hint} if isinstance(err, LarkAPIError) else {"exc_info": True}
            log.warning("lark_welcome_failed", chat_id=chat_id, error=str(err)[:300], **fix)
            async with self.db.engine.begin() as conn:  # let a later event try again
                await conn.execute(welcomed.delete().where(welcomed.c.chat_id == chat_id))
            return False
        log.info("lark_welcomed", chat_id=chat_id)
        return True
