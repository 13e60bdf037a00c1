"""Best-effort, bounded lookups that add context to a message: the replied-to text, forwards."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from larkbot.lark.content import describe, parse_content
from larkbot.lark.inbound import InboundMessage
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.enrich")
LOOKUP_TIMEOUT = 3.0
MAX_FORWARDED = 30
MAX_QUOTE = 1000


class _Messages(Protocol):
    async def get_message_items(self, message_id: str) -> list[dict[str, Any]]: ...


def _item_text(item: dict[str, Any]) -> str:
    body = item.get("body") if isinstance(item.get("body"), dict) else {}
    msg_type = str(item.get("msg_type") or "text")
    return describe(msg_type, parse_content((body or {}).get("content")), lambda ref: "").strip()


async def _items(client: _Messages, message_id: str) -> list[dict[str, Any]]:
    try:
        async with asyncio.timeout(LOOKUP_TIMEOUT):
            return await client.get_message_items(message_id)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # context is a nicety: the turn goes on without it
        log.info("lark_lookup_failed", message_id=message_id, error=type(err).__name__)
        return []


async def model_input(msg: InboundMessage, client: _Messages | None) -> str:
    """The text the model sees: the message, plus the quoted parent and forwarded messages."""
    text = msg.text
    if client is None:
        return text
    if msg.message_type == "merge_forward":
        items = [
            i for i in await _items(client, msg.message_id) if i.get("message_id") != msg.message_id
        ]
        lines = [f"- {_item_text(i)[:MAX_QUOTE]}" for i in items[:MAX_FORWARDED]]
        if lines:
            more = (
                f"\n(and {len(items) - MAX_FORWARDED} more)" if len(items) > MAX_FORWARDED else ""
            )
            text = f"[The user forwarded {len(items)} messages:]\n" + "\n".join(lines) + more
    if msg.parent_id:
        parent = await _items(client, msg.parent_id)
        quoted = _item_text(parent[0])[:MAX_QUOTE] if parent else ""
        if quoted:
            text = f"[In reply to: {quoted}]\n{text}"
    return text
