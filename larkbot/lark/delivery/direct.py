"""A direct message to one person outside any turn (e.g. the nightly memory card)."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

from cards import markdown_cards
from larkbot.lark.api.client import LarkClient

DirectMessage = Callable[[str, str], Awaitable[None]]  # (open_id, markdown text)


def direct_notifier(client: LarkClient | None) -> DirectMessage | None:
    """Sends a markdown card to an open_id (idempotent per text); None without a client."""
    if client is None:
        return None

    async def send(open_id: str, text: str) -> None:
        if not open_id.startswith("ou_"):  # "local": the terminal owner has no Lark chat
            return
        digest = hashlib.sha256(f"{open_id}|{text}".encode()).hexdigest()[:40]
        for i, card in enumerate(markdown_cards(text)):
            await client.send(open_id, "interactive", card, "open_id", uuid=f"dm-{digest}-{i}")

    return send
