"""Lark-native calls beyond plain messages: ephemeral cards, urgent buzz, document comments.

Each function is one Open Platform call with the bot's tenant token (through `LarkClient`'s
transport: counted, paced, retried) and raises `LarkAPIError` when Lark refuses it.
Paths: lark-workspace.md §7; ephemeral cards are not generated in lark-oapi, so their body is
the one community clients use (`card` an object, not a JSON string).
"""

from __future__ import annotations

from typing import Any

from cards.lark_check import checked
from larkbot.lark.api.client import MESSAGES, LarkClient, data, required, seg

EPHEMERAL_SEND = "/open-apis/ephemeral/v1/send"
EPHEMERAL_DELETE = "/open-apis/ephemeral/v1/delete"
FILES = "/open-apis/drive/v1/files"


async def send_ephemeral(
    client: LarkClient, chat_id: str, open_id: str, card: dict[str, Any]
) -> str:
    """An "only you can see" card for `open_id` in group `chat_id`; returns its message_id.

    Normal groups only (not topic groups); no notification; cannot be PATCHed, only deleted.
    """
    body = {
        "chat_id": chat_id,
        "open_id": open_id,
        "msg_type": "interactive",
        "card": checked(card),
    }
    resp = await client.transport.request("POST", EPHEMERAL_SEND, json=body, chat=chat_id)
    return required(data(resp), "message_id", "ephemeral send")


async def delete_ephemeral(client: LarkClient, message_id: str) -> None:
    """Remove an ephemeral card (after its click, or when its question expired)."""
    await client.transport.request(
        "POST", EPHEMERAL_DELETE, json={"message_id": message_id}, idempotent=True
    )


async def urgent_app(client: LarkClient, message_id: str, open_ids: list[str]) -> list[str]:
    """Buzz a message the bot sent to these people in the app (never SMS or phone).

    Returns the ids Lark refused (`invalid_user_id_list`: not in the chat, and so on).
    """
    resp = await client.transport.request(
        "PATCH",
        f"{MESSAGES}/{seg(message_id)}/urgent_app",
        params={"user_id_type": "open_id"},
        json={"user_id_list": open_ids},
    )
    invalid = data(resp).get("invalid_user_id_list")
    return [str(i) for i in invalid] if isinstance(invalid, list) else []


def comment_path(file_token: str, comment_id: str) -> str:
    """The path of one comment of a document."""
    return f"{FILES}/{seg(file_token)}/comments/{seg(comment_id)}"


async def get_comment(
    client: LarkClient, file_token: str, file_type: str, comment_id: str
) -> dict[str, Any]:
    """One comment of a document: `quote`, `reply_list.replies[{reply_id, user_id, content}]`."""
    path = comment_path(file_token, comment_id)
    params = {"file_type": file_type, "user_id_type": "open_id"}
    return data(await client.transport.request("GET", path, params=params))


async def reply_comment(
    client: LarkClient, file_token: str, file_type: str, comment_id: str, text: str
) -> str:
    """Post `text` as the bot's reply in a comment thread; returns the new reply_id."""
    path = comment_path(file_token, comment_id) + "/replies"
    elements = [{"type": "text_run", "text_run": {"text": text}}]
    resp = await client.transport.request(
        "POST",
        path,
        params={"file_type": file_type, "user_id_type": "open_id"},
        json={"content": {"elements": elements}},
    )
    return str(data(resp).get("reply_id", ""))
