"""FakeLark's Lark-native routes: ephemeral cards, urgent buzz, document comments, docx text.

- POST  /open-apis/ephemeral/v1/send   `{chat_id, open_id, msg_type, card}` → message_id;
  refused (code 230099… here 11246) in a chat listed in `fake.topic_chats` (topic groups)
- POST  /open-apis/ephemeral/v1/delete `{message_id}`                 (`fake.ephemerals[*].deleted`)
- PATCH /open-apis/im/v1/messages/{id}/urgent_app `{user_id_list}`    (`fake.urgents`)
- GET   /open-apis/drive/v1/files/{token}/comments/{comment_id}       seed with `add_comment`
- GET   /open-apis/drive/v1/files/{token}/comments                    (list, one page)
- POST  /open-apis/drive/v1/files/{token}/comments/{comment_id}/replies  (`fake.comment_replies`;
  the reply joins the comment's thread as the bot's)
- GET   /open-apis/docx/v1/documents/{id}/raw_content   seed `fake.docs[id]`; a user token
  (`fake.user_tokens`) is needed, as for a document shared only with people
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.lark_cardkit import ApiError
from tests.fakes.lark_routes import JSON_BODY, ok

if TYPE_CHECKING:
    from tests.fakes.lark_server import FakeLark

TOPIC_GROUP_REFUSED = 11246  # what the fake answers for an ephemeral card in a topic group


def _body(request: web.Request) -> dict[str, Any]:
    body = request.get(JSON_BODY)
    if not isinstance(body, dict):
        raise ApiError(99992402, "request body must be a JSON object")
    return body


def text_reply(reply_id: str, user_id: str, text: str) -> dict[str, Any]:
    """A comment reply as Lark lists it (plain text)."""
    elements = [{"type": "text_run", "text_run": {"text": text}}]
    return {"reply_id": reply_id, "user_id": user_id, "content": {"elements": elements}}


def add_native_routes(app: web.Application, fake: FakeLark) -> None:
    """Register the Lark-native routes on `app`."""

    async def eph_send(request: web.Request) -> web.Response:
        body = _body(request)
        chat_id, open_id, card = body.get("chat_id"), body.get("open_id"), body.get("card")
        if not isinstance(card, dict) or not chat_id or not open_id:
            raise ApiError(99992402, "chat_id, open_id and card (an object) are required")
        if chat_id in fake.topic_chats:
            raise ApiError(TOPIC_GROUP_REFUSED, "ephemeral cards are not supported in topic groups")
        message_id = fake.next_id("om_eph")
        record = {"message_id": message_id, "chat_id": chat_id, "open_id": open_id}
        fake.ephemerals.append({**record, "card": card, "deleted": False})
        return ok({"message_id": message_id})

    async def eph_delete(request: web.Request) -> web.Response:
        message_id = _body(request).get("message_id")
        for e in fake.ephemerals:
            if e["message_id"] == message_id:
                e["deleted"] = True
                return ok({})
        raise ApiError(230001, "ephemeral message not found")

    async def urgent(request: web.Request) -> web.Response:
        message_id = request.match_info["id"]
        if fake.messages.get(message_id, {}).get("sender", {}).get("sender_type") != "app":
            raise ApiError(230001, "only messages the bot sent can be buzzed")
        users = _body(request).get("user_id_list")
        if not isinstance(users, list) or not users:
            raise ApiError(99992402, "user_id_list is required")
        fake.urgents.append({"message_id": message_id, "user_id_list": users})
        return ok({"invalid_user_id_list": []})

    def comment(request: web.Request) -> dict[str, Any]:
        if not request.query.get("file_type"):
            raise ApiError(99992402, "file_type is required")
        key = (request.match_info["token"], request.match_info["comment_id"])
        found = fake.comments.get(key)
        if found is None:
            raise ApiError(1069302, "comment not found")
        return found

    async def get_comment(request: web.Request) -> web.Response:
        return ok(comment(request))

    async def list_comments(request: web.Request) -> web.Response:
        token = request.match_info["token"]
        items = [c for (t, _), c in fake.comments.items() if t == token]
        return ok({"items": items, "has_more": False, "page_token": ""})

    async def reply(request: web.Request) -> web.Response:
        found = comment(request)
        elements = _body(request).get("content", {}).get("elements")
        if not isinstance(elements, list) or not elements:
            raise ApiError(99992402, "content.elements is required")
        reply_id = fake.next_id("rp")
        text = "".join(e.get("text_run", {}).get("text", "") for e in elements)
        found["reply_list"]["replies"].append(text_reply(reply_id, fake.bot_open_id, text))
        auth = request.headers.get("Authorization", "")
        fake.comment_replies.append(
            {
                "file_token": request.match_info["token"],
                "comment_id": request.match_info["comment_id"],
                "reply_id": reply_id,
                "text": text,
                "token": auth.removeprefix("Bearer "),
                "at": time.time(),
            }
        )
        return ok({"reply_id": reply_id, "content": {"elements": elements}})

    async def raw_content(request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in fake.user_tokens:
            raise ApiError(1770032, "forbidden: the document is not shared with this identity")
        doc = fake.docs.get(request.match_info["id"])
        if doc is None:
            raise ApiError(1770002, "document not found")
        return ok({"content": doc})

    files = "/open-apis/drive/v1/files/{token}/comments"
    app.router.add_post("/open-apis/ephemeral/v1/send", eph_send)
    app.router.add_post("/open-apis/ephemeral/v1/delete", eph_delete)
    app.router.add_patch("/open-apis/im/v1/messages/{id}/urgent_app", urgent)
    app.router.add_get(files, list_comments)
    app.router.add_get(files + "/{comment_id}", get_comment)
    app.router.add_post(files + "/{comment_id}/replies", reply)
    app.router.add_get("/open-apis/docx/v1/documents/{id}/raw_content", raw_content)


def seed_comment(
    fake: FakeLark, file_token: str, comment_id: str, quote: str, replies: list[dict[str, Any]]
) -> None:
    """Store a comment with its thread (`text_reply(...)` items)."""
    fake.comments[(file_token, comment_id)] = {
        "comment_id": comment_id,
        "quote": quote,
        "is_whole": False,
        "is_solved": False,
        "reply_list": {"replies": json.loads(json.dumps(replies))},
    }
