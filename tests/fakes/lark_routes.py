"""FakeLark's route handlers (see tests/fakes/lark_server.py for the documented surface)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.lark_cardkit import ApiError, refuse_bad_card

if TYPE_CHECKING:
    from tests.fakes.lark_server import FakeLark

MSG_TYPES = {
    "text",
    "post",
    "image",
    "file",
    "audio",
    "media",
    "sticker",
    "interactive",
    "share_chat",
    "share_user",
    "system",
}
RECEIVE_ID_TYPES = {"open_id", "union_id", "user_id", "email", "chat_id"}
TEXT_LIMIT = 150 * 1024  # bytes; post and cards: 30 KB
CARD_LIMIT = 30 * 1024
JSON_BODY: web.RequestKey[Any] = web.RequestKey("lark_json_body", object)


def ok(data: Any = None, **extra: Any) -> web.Response:
    """A Lark success body."""
    body: dict[str, Any] = {"code": 0, "msg": "success", **extra}
    if data is not None:
        body["data"] = data
    return web.json_response(body)


def _body(request: web.Request) -> dict[str, Any]:
    body = request.get(JSON_BODY)
    if not isinstance(body, dict):
        raise ApiError(99992402, "request body must be a JSON object")
    return body


def _content(msg_type: Any, content: Any, fake: FakeLark) -> dict[str, Any]:
    if msg_type not in MSG_TYPES:
        raise ApiError(230001, f"invalid msg_type {msg_type!r}")
    if not isinstance(content, str):
        raise ApiError(230001, "content must be a JSON string")
    try:
        parsed = json.loads(content)
    except ValueError as err:
        raise ApiError(230001, "content is not valid JSON") from err
    if not isinstance(parsed, dict):
        raise ApiError(230001, "content must encode a JSON object")
    limit = TEXT_LIMIT if msg_type == "text" else CARD_LIMIT
    if len(content.encode("utf-8")) > limit:
        raise ApiError(230025, f"message content exceeds {limit} bytes")
    if msg_type == "interactive" and parsed.get("schema") == "2.0":
        refuse_bad_card(parsed, fake.card_rules, len(content.encode("utf-8")))
    return parsed


def _create(fake: FakeLark, body: dict[str, Any], **where: Any) -> dict[str, Any]:
    """Create (or, for a known uuid, return the earlier) message; records it in `fake.sent`."""
    uuid = body.get("uuid") or ""
    if uuid and uuid in fake.uuids:
        fake.dedup_hits += 1
        return fake.messages[fake.uuids[uuid]]
    msg_type = body.get("msg_type")
    parsed = _content(msg_type, body.get("content"), fake)
    message_id = fake.next_id("om")
    if msg_type == "interactive" and parsed.get("type") == "card":
        fake.cardkit.attach(parsed, message_id)
    parent = fake.messages.get(where.get("reply_to") or "", {})
    thread_id = parent.get("thread_id") or (
        fake.next_id("omt") if where.get("reply_in_thread") else ""
    )
    message = {
        "message_id": message_id,
        "root_id": parent.get("root_id") or where.get("reply_to") or "",
        "parent_id": where.get("reply_to") or "",
        "thread_id": thread_id,
        "msg_type": msg_type,
        "create_time": str(int(time.time() * 1000)),
        "chat_id": where.get("chat_id") or parent.get("chat_id", ""),
        "sender": {"id": fake.app_id, "id_type": "app_id", "sender_type": "app"},
        "body": {"content": body["content"]},
    }
    fake.messages[message_id] = message
    if uuid:
        fake.uuids[uuid] = message_id
    fake.sent.append(
        {
            "message_id": message_id,
            "msg_type": msg_type,
            "content": body["content"],
            "body": parsed,
            "uuid": uuid or None,
            "chat_id": message["chat_id"],
            "receive_id": where.get("receive_id", ""),
            "receive_id_type": where.get("receive_id_type", ""),
            "reply_to": where.get("reply_to"),
            "reply_in_thread": bool(where.get("reply_in_thread")),
            "thread_id": thread_id,
        }
    )
    return message


def add_routes(app: web.Application, fake: FakeLark) -> None:
    """Register every route of the fake platform on `app`."""

    async def token(request: web.Request) -> web.Response:
        body = _body(request)
        if body.get("app_id") != fake.app_id or body.get("app_secret") != fake.app_secret:
            raise ApiError(99991543, "app_id or app_secret is invalid")  # HTTP 400, as Lark
        fake.token_fetches += 1
        issued = f"t-fake-{fake.token_fetches}"
        fake.valid_tokens.add(issued)
        return web.json_response(
            {"code": 0, "msg": "ok", "tenant_access_token": issued, "expire": fake.token_expire}
        )

    async def bot_info(request: web.Request) -> web.Response:
        bot = {"activate_status": 2, "app_name": fake.bot_name, "avatar_url": ""}
        return ok(bot={**bot, "ip_white_list": [], "open_id": fake.bot_open_id})

    async def create(request: web.Request) -> web.Response:
        kind = request.query.get("receive_id_type", "")
        if kind not in RECEIVE_ID_TYPES:
            raise ApiError(99992402, "receive_id_type is required")
        body = _body(request)
        receive_id = body.get("receive_id")
        if not isinstance(receive_id, str) or not receive_id:
            raise ApiError(230034, "receive_id is invalid")
        # a person's DM with the bot is a chat of its own (Lark answers its chat_id too)
        chat_id = (
            receive_id
            if kind == "chat_id"
            else fake.p2p_chat(receive_id)
            if kind == "open_id"
            else ""
        )
        fake.check_chat_rate(receive_id)
        where = {"chat_id": chat_id, "receive_id": receive_id, "receive_id_type": kind}
        return ok(_create(fake, body, **where))

    async def reply(request: web.Request) -> web.Response:
        body = _body(request)
        parent = request.match_info["id"]
        fake.check_chat_rate(fake.messages.get(parent, {}).get("chat_id") or parent)
        where = {
            "reply_to": request.match_info["id"],
            "reply_in_thread": body.get("reply_in_thread"),
        }
        return ok(_create(fake, body, **where))

    async def patch(request: web.Request) -> web.Response:
        message_id = request.match_info["id"]
        message = fake.messages.get(message_id)
        if message is None or message["msg_type"] != "interactive":
            raise ApiError(230001, "only interactive messages the bot sent can be patched")
        content = _body(request).get("content")
        parsed = _content("interactive", content, fake)
        message["body"] = {"content": content}
        fake.patches.append({"message_id": message_id, "content": content, "body": parsed})
        return ok({})

    async def get(request: web.Request) -> web.Response:
        message = fake.messages.get(request.match_info["id"])
        if message is None:
            raise ApiError(230001, "message not found")
        return ok({"items": [message, *fake.forwards.get(message["message_id"], [])]})

    async def react(request: web.Request) -> web.Response:
        reaction = _body(request).get("reaction_type")
        emoji = reaction.get("emoji_type") if isinstance(reaction, dict) else None
        if not isinstance(emoji, str) or not emoji:
            raise ApiError(231001, "reaction_type.emoji_type is required")
        reaction_id = fake.next_id("rc")
        record = {"message_id": request.match_info["id"], "emoji_type": emoji}
        fake.reactions.append({**record, "reaction_id": reaction_id})
        return ok({"reaction_id": reaction_id, "reaction_type": {"emoji_type": emoji}})

    async def card_create(request: web.Request) -> web.Response:
        return ok({"card_id": fake.cardkit.create(_body(request))})

    async def card_content(request: web.Request) -> web.Response:
        m = request.match_info
        fake.cardkit.content(m["card_id"], m["element_id"], _body(request))
        return ok({})

    async def card_settings(request: web.Request) -> web.Response:
        fake.cardkit.settings(request.match_info["card_id"], _body(request))
        return ok({})

    async def card_update(request: web.Request) -> web.Response:
        fake.cardkit.update(request.match_info["card_id"], _body(request))
        return ok({})

    msgs = "/open-apis/im/v1/messages"
    cards = "/open-apis/cardkit/v1/cards"
    app.router.add_post("/open-apis/auth/v3/tenant_access_token/internal", token)
    app.router.add_get("/open-apis/bot/v3/info", bot_info)
    app.router.add_post(msgs, create)
    app.router.add_post(msgs + "/{id}/reply", reply)
    app.router.add_patch(msgs + "/{id}", patch)
    app.router.add_get(msgs + "/{id}", get)
    app.router.add_post(msgs + "/{id}/reactions", react)
    app.router.add_post(cards, card_create)
    app.router.add_put(cards + "/{card_id}/elements/{element_id}/content", card_content)
    app.router.add_patch(cards + "/{card_id}/settings", card_settings)
    app.router.add_put(cards + "/{card_id}", card_update)
