"""A card Lark refuses for its content still reaches the user: plainer cards, then text.

Lark's card limits are partly undocumented (how many tables, which elements count), so the
budget in `cards/` can be wrong. When Lark (or our own validator, `InvalidCard`) refuses a card
for what it holds, its text goes out again in the most conservative form Lark accepts: plain
split cards (`cards.lark_fallback`), and if one of those is refused too, that card and the
rest as text messages. In order, each part once: every part has its own `uuid` derived from the
original one, so a retried or re-run delivery is deduplicated by Lark part by part.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

from cards.lark_check import InvalidCard, is_card_json
from cards.lark_fallback import card_text, plain_cards
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.render import TEXT_LIMIT, split_answer, text_content
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.api.refusal")

# Codes for "this card's content cannot be built or shown", not for who, where or how often:
# 230099 card build failed (sub-code in msg: 11310 tables/elements over limit, 200621 bad
# JSON, 200861 v1 tag, 200914/200915 table rows, 200570 bad img_key), 230025 content too large,
# CardKit's 200860 (30 KB) and 300305 (element limit), and the sub-codes on their own.
CONTENT_CODES = frozenset(
    {230099, 230025, 11310, 200570, 200621, 200860, 200861, 200914, 200915, 300305}
)

# (msg_type, content, uuid) -> message_id: one send or reply, raising what Lark answered
Post = Callable[[str, str | dict[str, Any], str | None], Awaitable[str]]


def card_refused(err: BaseException) -> bool:
    """True when Lark (or the validator) said no to the card's content itself."""
    if isinstance(err, InvalidCard):
        return True
    return isinstance(err, LarkAPIError) and err.code in CONTENT_CODES


def part_uuid(uuid: str | None, part: str) -> str | None:
    """The `uuid` of fallback part `part` of a message sent with `uuid` (None: a fresh one)."""
    if not uuid:
        return None
    return hashlib.sha256(f"{uuid}#{part}".encode()).hexdigest()[:40]


async def post_or_degrade(
    post: Post, msg_type: str, content: str | dict[str, Any], uuid: str | None
) -> str:
    """Post the message; a card refused for its content goes out plainer. The first id."""
    if msg_type != "interactive" or not is_card_json(content):
        return await post(msg_type, content, uuid)
    assert isinstance(content, dict)
    try:
        return await post(msg_type, content, uuid)
    except (LarkAPIError, InvalidCard) as err:
        if not card_refused(err):
            raise
        log.warning("lark_card_refused", code=getattr(err, "code", None), error=str(err)[:300])
        text = card_text(content)
        if not text.strip():
            raise  # nothing readable to salvage (an image-only card, say)
    return await _plainer(post, text, uuid)


async def _plainer(post: Post, text: str, uuid: str | None) -> str:
    """`text` as plain cards; from the first one refused on, as text messages."""
    cards = await asyncio.to_thread(plain_cards, text)  # CPU work off the loop
    ids: list[str] = []
    for i, card in enumerate(cards):
        try:
            ids.append(await post("interactive", card, part_uuid(uuid, f"p{i}")))
            continue
        except (LarkAPIError, InvalidCard) as err:
            if not card_refused(err):
                raise
            log.warning("lark_plain_card_refused", code=getattr(err, "code", None))
        rest = "\n\n".join(card_text(c) for c in cards[i:])
        for k, chunk in enumerate(split_answer(rest, TEXT_LIMIT)):
            ids.append(await post("text", text_content(chunk), part_uuid(uuid, f"p{i}t{k}")))
        break
    return ids[0]
