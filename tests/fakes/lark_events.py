"""Build Lark HTTP callbacks the way Lark sends them: envelope → (encrypt) → sign.

raw, headers = lark_request(envelope("im.message.receive_v1", event, token="vt"),
                            encrypt_key="ek")
outcome = verify_event_request(raw, headers, lark_config, now=time.time())
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from larkbot.lark.arrival import crypto


def envelope(
    event_type: str,
    event: dict[str, Any] | None = None,
    *,
    token: str = "",
    event_id: str | None = None,
    app_id: str = "cli_test",
) -> dict[str, Any]:
    """A schema 2.0 envelope with a fresh event_id."""
    return {
        "schema": "2.0",
        "header": {
            "event_id": event_id or uuid.uuid4().hex,
            "event_type": event_type,
            "create_time": str(int(time.time() * 1000)),
            "token": token,
            "app_id": app_id,
            "tenant_key": "tenant_test",
        },
        "event": event or {},
    }


def challenge(token: str = "", value: str = "challenge-123") -> dict[str, Any]:
    """A url_verification request (flat, no header)."""
    return {"challenge": value, "token": token, "type": "url_verification"}


def lark_request(
    payload: dict[str, Any] | bytes,
    *,
    encrypt_key: str = "",
    sign: bool = True,
    timestamp: float | None = None,
    nonce: str = "nonce-1",
) -> tuple[bytes, dict[str, str]]:
    """(raw body, headers): encrypted and signed when `encrypt_key` is given (and `sign`)."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"Content-Type": "application/json; charset=utf-8"}
    if not encrypt_key:
        return raw, headers
    raw = json.dumps({"encrypt": crypto.encrypt(raw, encrypt_key)}).encode()
    if sign:
        ts = str(int(time.time() if timestamp is None else timestamp))
        headers["X-Lark-Request-Timestamp"] = ts
        headers["X-Lark-Request-Nonce"] = nonce
        headers["X-Lark-Signature"] = crypto.signature(ts, nonce, encrypt_key, raw)
    return raw, headers
