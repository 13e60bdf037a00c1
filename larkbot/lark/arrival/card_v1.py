"""Legacy (v1) card callbacks: the message-card request URL of older apps.

Their bodies have no `schema` (`open_id`, `open_message_id`, `open_chat_id`, `token` — the
card's update token, not the verification token — and `action`), and they are signed with the
verification token, as lark-oapi's `CardActionHandler._verify_sign` checks them:

    X-Lark-Signature = hex(sha1(timestamp + nonce + verification_token + raw body))

(`crypto.verify_signature` with `hashlib.sha1`, reached through `webhook.signature_state`.)

lark-oapi compares with `!=` and checks no freshness; here the compare is constant-time and the
timestamp must be inside `lark.replay_window_seconds`, as for events. A verified v1 click becomes
the `card.action.trigger` envelope the v2 handlers read, so both formats act alike.
"""

from __future__ import annotations

from typing import Any

V1_EVENT_TYPE = "card.action.trigger_v1"
SHA1_HEX_DIGITS = 40  # a v2 (SHA-256) signature has 64


def is_v1_signature(given: str) -> bool:
    """Whether an X-Lark-Signature has the v1 (SHA-1) length."""
    return len(given.strip()) == SHA1_HEX_DIGITS


def v1_envelope(payload: dict[str, Any], request_id: str) -> dict[str, Any] | None:
    """The v2 `card.action.trigger` envelope for a v1 click (None when it is not a click)."""
    action, open_id = payload.get("action"), payload.get("open_id")
    if not isinstance(action, dict) or not isinstance(open_id, str) or not open_id:
        return None
    operator = {"open_id": open_id}
    for key in ("user_id", "union_id", "tenant_key"):
        if isinstance(payload.get(key), str):
            operator[key] = payload[key]
    context = {k: payload[k] for k in ("open_message_id", "open_chat_id") if k in payload}
    return {
        "schema": "2.0",
        "header": {
            "event_id": f"card-v1:{request_id}",
            "event_type": V1_EVENT_TYPE,
            "tenant_key": str(payload.get("tenant_key", "")),
        },
        "event": {
            "operator": operator,
            "token": payload.get("token", ""),  # the card's update token, as in v2 `event.token`
            "action": action,
            "host": "im_message",
            "context": context,
        },
    }


def v1_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """A v2 callback answer in the v1 form: v1 replaces the card with the body itself, so a new
    card is answered bare; anything else (a toast, or {}) goes back as it is."""
    card = answer.get("card")
    if isinstance(card, dict) and card.get("type") == "raw" and isinstance(card.get("data"), dict):
        data: dict[str, Any] = card["data"]
        return data
    return answer
