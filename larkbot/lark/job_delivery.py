"""The Lark side of the scheduler's `Notifier` seam: a job's answer posted as new messages."""

from __future__ import annotations

import asyncio

from larkbot.lark.client import LarkClient
from larkbot.lark.render import answer_messages


class LarkNotifier:
    """Notifier over `LarkClient.send`: markdown cards or text, split to Lark's size limits."""

    def __init__(self, client: LarkClient) -> None:
        self._client = client

    async def notify(self, chat_id: str, text: str, uuid: str) -> None:
        """Post `text` to the chat as new message(s); part i > 0 gets its own derived uuid."""
        # reading and splitting a very long answer is CPU work: a thread keeps the loop answering
        messages = await asyncio.to_thread(answer_messages, text)
        for i, (msg_type, content) in enumerate(messages):
            uid = uuid if i == 0 else f"{uuid[:44]}-{i}"
            await self._client.send(chat_id, msg_type, content, uuid=uid)
