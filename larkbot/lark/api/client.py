"""LarkClient: the Open Platform calls the bot makes (IM messages and media, contacts, CardKit)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote
from uuid import uuid4

import httpx

from cards.lark_check import checked, is_card_json
from larkbot.config import LarkConfig
from larkbot.lark.api.binary import TRANSPORT_ERROR, Download
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.refusal import post_or_degrade
from larkbot.lark.api.shared_cache import SharedCache, app_key
from larkbot.lark.api.transport import LarkTransport, RetryPolicy

MESSAGES = "/open-apis/im/v1/messages"
CARDS = "/open-apis/cardkit/v1/cards"
BOT_INFO = "/open-apis/bot/v3/info"
IMAGES = "/open-apis/im/v1/images"
FILES = "/open-apis/im/v1/files"
USERS = "/open-apis/contact/v3/users"
UUID_MAX = 50
BOT_INFO_SECONDS = 24 * 3600.0  # the bot's open_id and name, reused by replicas and restarts


def to_content(content: str | dict[str, Any]) -> str:
    """Lark wants message `content` as a JSON *string*; serialise dicts compactly.

    Card JSON is validated first (`cards.checked`): a card Lark would refuse is never sent.
    """
    if isinstance(content, str):
        return content
    if is_card_json(content):
        checked(content)
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"))


def idempotency_key(uuid: str | None) -> str:
    """A Lark `uuid` (<= 50 chars): the caller's, hashed if too long, else a fresh one per call."""
    # A fresh one still makes this call's own retries safe (a 5xx or timeout after Lark accepted
    # the message cannot post it twice); the caller's makes redeliveries and restarts safe too.
    if not uuid:
        return uuid4().hex
    return uuid if len(uuid) <= UUID_MAX else hashlib.sha256(uuid.encode()).hexdigest()[:UUID_MAX]


def with_op_uuid(card_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with the `uuid` of this CardKit operation (its card, sequence and content).

    A retry of an update whose answer was lost is then deduplicated by Lark rather than
    refused for reusing its sequence (300317), which would end the live card for nothing.
    """
    op = json.dumps([card_id, body], sort_keys=True, ensure_ascii=False)
    return {**body, "uuid": hashlib.sha256(op.encode()).hexdigest()[:UUID_MAX]}


def seg(value: str) -> str:
    """One URL path segment (ids come from Lark events, i.e. from outside)."""
    return quote(value, safe="")


def as_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else {} (Lark's answers are checked, not trusted)."""
    return value if isinstance(value, dict) else {}


def data(body: dict[str, Any]) -> dict[str, Any]:
    """The `data` object of a Lark answer, or {}."""
    return as_object(body.get("data"))


def required(fields: dict[str, Any], key: str, what: str) -> str:
    """`fields[key]` as a non-empty string; LarkAPIError when the answer lacks it."""
    value = fields.get(key)
    if not isinstance(value, str) or not value:
        raise LarkAPIError(TRANSPORT_ERROR, f"{what} response without {key}")
    return value


class LarkClient:
    """Async Lark Open Platform client over one shared httpx.AsyncClient; raises LarkAPIError."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        domain: str,
        app_id: str,
        app_secret: str,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.transport = LarkTransport(http, domain, app_id, app_secret, retry=retry)
        self._bot_key = app_key("bot_info", domain, app_id, app_secret)

    def share(self, cache: SharedCache, on_call: Callable[[str], None] | None = None) -> None:
        """Keep the token and bot info in `cache` (the database); report each call to `on_call`."""
        self.transport.cache = cache
        self.transport.on_call = on_call

    @classmethod
    def from_config(
        cls, http: httpx.AsyncClient, lark: LarkConfig, *, retry: RetryPolicy | None = None
    ) -> LarkClient:
        """Build from the `lark:` config section."""
        secret = lark.app_secret.get_secret_value()
        return cls(http, lark.domain, lark.app_id, secret, retry=retry)

    async def token(self) -> str:
        """The current tenant_access_token (fetched if needed); `larkbot doctor` uses it."""
        return await self.transport.token()

    async def send(
        self,
        receive_id: str,
        msg_type: str,
        content: str | dict[str, Any],
        receive_id_type: str = "chat_id",
        uuid: str | None = None,
        *,
        degrade: bool = True,
    ) -> str:
        """Send a new message; returns its message_id. `uuid`: see `idempotency_key`.

        `degrade`: a card Lark refuses for its content goes out plainer (`refusal`); the id
        is then the first of those messages.
        """

        async def once(kind: str, body_content: str | dict[str, Any], uid: str | None) -> str:
            body: dict[str, Any] = {
                "receive_id": receive_id,
                "msg_type": kind,
                "content": to_content(body_content),
                "uuid": idempotency_key(uid),
            }
            params = {"receive_id_type": receive_id_type}
            resp = await self.transport.request(
                "POST", MESSAGES, params=params, json=body, chat=receive_id, idempotent=True
            )
            return required(data(resp), "message_id", "send")

        if not degrade:
            return await once(msg_type, content, uuid)
        return await post_or_degrade(once, msg_type, content, uuid)

    async def reply(
        self,
        message_id: str,
        msg_type: str,
        content: str | dict[str, Any],
        uuid: str | None = None,
        reply_in_thread: bool = False,
        chat_id: str = "",
        *,
        degrade: bool = True,
    ) -> str:
        """Reply to a message (in its thread when asked or when it is in one); returns the id.

        `chat_id` (the message's chat) paces the reply with the chat's other messages; without
        it the reply is paced as a chat of its own. `degrade`: as for `send`.
        """
        path = f"{MESSAGES}/{seg(message_id)}/reply"
        chat = chat_id or message_id

        async def once(kind: str, body_content: str | dict[str, Any], uid: str | None) -> str:
            body: dict[str, Any] = {
                "msg_type": kind,
                "content": to_content(body_content),
                "uuid": idempotency_key(uid),
            }
            if reply_in_thread:
                body["reply_in_thread"] = True
            resp = await self.transport.request("POST", path, json=body, chat=chat, idempotent=True)
            return required(data(resp), "message_id", "reply")

        if not degrade:
            return await once(msg_type, content, uuid)
        return await post_or_degrade(once, msg_type, content, uuid)

    async def patch(self, message_id: str, card: dict[str, Any] | str) -> None:
        """Replace the card of an interactive message the bot sent (5 QPS per message)."""
        await self.transport.request(  # paced as its own lane: Lark allows 5 QPS per message
            "PATCH",
            f"{MESSAGES}/{seg(message_id)}",
            json={"content": to_content(card)},
            chat=f"patch:{message_id}",
            idempotent=True,  # the whole card each time: twice is the same as once
        )

    async def get_message_items(self, message_id: str) -> list[dict[str, Any]]:
        """GET a message: its items (one, or the forwarded messages of a merge_forward)."""
        resp = await self.transport.request("GET", f"{MESSAGES}/{seg(message_id)}")
        items = data(resp).get("items")
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    async def get_message(self, message_id: str) -> dict[str, Any]:
        """GET a message: the message object itself (msg_type, body.content, sender, …)."""
        items = await self.get_message_items(message_id)
        if not items:
            raise LarkAPIError(TRANSPORT_ERROR, "get message response without items")
        return items[0]

    async def add_reaction(self, message_id: str, emoji_type: str) -> str:
        """Add an emoji reaction (e.g. "THUMBSUP", "OnIt"); returns the reaction_id."""
        resp = await self.transport.request(
            "POST",
            f"{MESSAGES}/{seg(message_id)}/reactions",
            json={"reaction_type": {"emoji_type": emoji_type}},
        )
        return str(data(resp).get("reaction_id", ""))

    async def upload_image(self, content: bytes, name: str, mime: str) -> str:
        """POST /im/v1/images (image_type=message, ≤ 10 MB); returns the image_key."""
        files = {"image": (name, content, mime)}
        resp = await self.transport.request(
            "POST", IMAGES, data={"image_type": "message"}, files=files
        )
        return required(data(resp), "image_key", "upload image")

    async def upload_file(
        self, content: bytes, name: str, file_type: str, duration_ms: int | None = None
    ) -> str:
        """POST /im/v1/files (≤ 30 MB; `file_type` opus|mp4|pdf|doc|xls|ppt|stream) → file_key."""
        form = {"file_type": file_type, "file_name": name}
        if duration_ms is not None:
            form["duration"] = str(duration_ms)
        files = {"file": (name, content, "application/octet-stream")}
        resp = await self.transport.request("POST", FILES, data=form, files=files)
        return required(data(resp), "file_key", "upload file")

    async def download_resource(
        self, message_id: str, file_key: str, kind: str, max_bytes: int
    ) -> Download:
        """GET a user's image or file from their message (`kind` "image" | "file"), capped."""
        path = f"{MESSAGES}/{seg(message_id)}/resources/{seg(file_key)}"
        return await self.transport.download(path, params={"type": kind}, max_bytes=max_bytes)

    async def get_user(self, open_id: str) -> dict[str, Any]:
        """GET /contact/v3/users/:open_id → the `user` object (name, en_name, …)."""
        resp = await self.transport.request(
            "GET", f"{USERS}/{seg(open_id)}", params={"user_id_type": "open_id"}
        )
        return as_object(data(resp).get("user"))

    async def bot_info(self) -> dict[str, Any]:
        """GET /bot/v3/info → the `bot` object (open_id, app_name, activate_status, …).

        With a shared cache (`share`) the answer is reused for a day by every replica.
        """
        cache = self.transport.cache
        hit = await cache.get(self._bot_key) if cache is not None else None
        if hit is not None:
            cached = json.loads(hit[0])
            if isinstance(cached, dict) and cached.get("open_id"):
                return cached
        resp = await self.transport.request("GET", BOT_INFO)
        bot = resp.get("bot")
        if not isinstance(bot, dict) or not bot.get("open_id"):
            raise LarkAPIError(TRANSPORT_ERROR, "bot info response without bot.open_id")
        if cache is not None:
            await cache.put(self._bot_key, json.dumps(bot), time.time() + BOT_INFO_SECONDS)
        return bot

    async def create_card(self, card: dict[str, Any]) -> str:
        """Create a CardKit card entity from card JSON 2.0; returns its card_id."""
        resp = await self.transport.request(
            "POST", CARDS, json={"type": "card_json", "data": to_content(card)}
        )
        return required(data(resp), "card_id", "create card")

    async def stream_text(self, card_id: str, element_id: str, text: str, sequence: int) -> None:
        """Set the FULL text of a streaming element; `sequence` must rise on every card op."""
        body = with_op_uuid(card_id, {"content": text, "sequence": sequence})
        path = f"{CARDS}/{seg(card_id)}/elements/{seg(element_id)}/content"
        await self.transport.request("PUT", path, json=body, idempotent=True)

    async def update_card_settings(
        self, card_id: str, settings: dict[str, Any], sequence: int
    ) -> None:
        """PATCH card settings, e.g. `{"config": {"streaming_mode": False}}`."""
        body = with_op_uuid(card_id, {"settings": to_content(settings), "sequence": sequence})
        path = f"{CARDS}/{seg(card_id)}/settings"
        await self.transport.request("PATCH", path, json=body, idempotent=True)

    async def update_card(self, card_id: str, card: dict[str, Any], sequence: int) -> None:
        """Replace a card entity's whole JSON."""
        spec = {"type": "card_json", "data": to_content(card)}
        body = with_op_uuid(card_id, {"card": spec, "sequence": sequence})
        await self.transport.request("PUT", f"{CARDS}/{seg(card_id)}", json=body, idempotent=True)
