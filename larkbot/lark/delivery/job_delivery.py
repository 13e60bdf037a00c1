"""The Lark side of the scheduler's `Notifier` seam: a job's answer posted as new messages."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.native_api import urgent_app
from larkbot.lark.api.render import answer_messages
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.delivery.job_delivery")


class LarkNotifier:
    """Notifier over `LarkClient.send`: markdown cards or text, split to Lark's size limits."""

    def __init__(self, client: LarkClient) -> None:
        self._client = client

    async def notify(self, chat_id: str, text: str, uuid: str, urgent: Sequence[str] = ()) -> None:
        """Post `text` to the chat as new message(s); part i > 0 gets its own derived uuid.

        `urgent`: the first message is buzzed (urgent_app, in the app only) to these people;
        a refused buzz is logged, the message itself is already there.
        """
        # reading and splitting a very long answer is CPU work: a thread keeps the loop answering
        messages = await asyncio.to_thread(answer_messages, text)
        first = ""
        for i, (msg_type, content) in enumerate(messages):
            uid = uuid if i == 0 else f"{uuid[:44]}-{i}"
            sent = await self._client.send(chat_id, msg_type, content, uuid=uid)
            first = first or sent
        if urgent and first:
            try:
                invalid = await urgent_app(self._client, first, list(urgent))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("lark_urgent_failed", chat_id=chat_id, exc_info=True)
                return
            if invalid:
                log.warning("lark_urgent_refused", chat_id=chat_id, invalid=invalid)
