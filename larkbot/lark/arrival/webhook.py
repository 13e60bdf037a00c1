"""The verification chain for Lark HTTP callbacks (`POST /lark/events`, `POST /lark/card`).

Pure and synchronous: bytes + headers + config + clock in, a `WebhookOutcome` out. Each step
is a small function raising `Rejected(status, reason)`; the two entry points run them in order:

    size cap (413) → header case → signature + replay window (401) → JSON (400) → decrypt (400)
    → verification token (403) → url_verification challenge → schema 2.0 envelope (400)

The url_verification challenge is exempt from the signature and the replay window (Lark sends
it unsigned) but is answered only after decryption succeeded or the token matched, unless
neither an encrypt key nor a token is configured. Nothing a sender controls yields a 5xx.

`POST /lark/card` also takes the v1 card callbacks of older apps (`card_v1.py`): a SHA-1
X-Lark-Signature over the verification token selects their chain (size → signature + replay
window → JSON → decrypt), and the click becomes the same `card.action.trigger` envelope.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from larkbot.config import LarkConfig
from larkbot.lark.arrival import card_v1, crypto

MAX_BODY_BYTES = 1024 * 1024
URL_VERIFICATION = "url_verification"
CARD_ACTION_TRIGGER = "card.action.trigger"
H_TIMESTAMP = "x-lark-request-timestamp"
H_NONCE = "x-lark-request-nonce"
H_SIGNATURE = "x-lark-signature"
_SIGNATURE_HEADERS = (H_TIMESTAMP, H_NONCE, H_SIGNATURE)

SignatureState = Literal["off", "ok", "missing", "stale"]


UNAUTHENTICATED = (
    "refusing unauthenticated events: set lark.verification_token and/or lark.encrypt_key "
    "(Lark console → Events & Callbacks → Encryption strategy)"
)


class Rejected(Exception):
    """A request the chain refuses: carries the HTTP status (always 4xx) and a log-safe reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class WebhookOutcome:
    """What to answer Lark (`status`, JSON `body`) and, for an accepted event, its envelope."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    envelope: dict[str, Any] | None = None
    reason: str = ""
    signed: bool = False  # X-Lark-Signature checked and fresh: the event is Lark's, and recent

    @property
    def event_type(self) -> str:
        """`header.event_type` of the accepted envelope, or ""."""
        return str((self.envelope or {}).get("header", {}).get("event_type", ""))

    @property
    def event_id(self) -> str:
        """`header.event_id` of the accepted envelope, or ""."""
        return str((self.envelope or {}).get("header", {}).get("event_id", ""))


def check_size(raw: bytes, limit: int = MAX_BODY_BYTES) -> None:
    """Refuse empty bodies (400) and bodies over the cap (413)."""
    if len(raw) > limit:
        raise Rejected(413, "body too large")
    if not raw or raw.isspace():
        raise Rejected(400, "empty body")


def lower_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names are case-insensitive (HTTP/2 proxies lower-case them): normalise to lower."""
    return {str(k).lower(): str(v) for k, v in headers.items()}


def signature_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The X-Lark-* signature headers present, keyed in lower case (any spelling accepted)."""
    return {k: v for k, v in lower_headers(headers).items() if k in _SIGNATURE_HEADERS}


def _timestamp_seconds(value: str) -> float:
    if not value.strip().isdigit():
        raise Rejected(401, "malformed X-Lark-Request-Timestamp")
    ts = float(value)
    # Lark documents seconds; tolerate milliseconds rather than call every request stale.
    return ts / 1000.0 if ts > 1e11 else ts


def signature_state(
    raw: bytes,
    headers: Mapping[str, str],
    key: str,
    now: float,
    window: float,
    digest: crypto.Digest = hashlib.sha256,
) -> SignatureState:
    """Check X-Lark-Signature (lower-cased headers); bad or partial → 401, absent/stale → noted."""
    if not key:
        return "off"
    present = [h in headers for h in _SIGNATURE_HEADERS]
    if not any(present):
        return "missing"
    if not all(present):
        raise Rejected(401, "incomplete signature headers")
    ts, nonce, given = (headers[h] for h in _SIGNATURE_HEADERS)
    if not crypto.verify_signature(ts, nonce, key, raw, given, digest):
        raise Rejected(401, "bad signature")
    return "ok" if abs(now - _timestamp_seconds(ts)) <= window else "stale"


def _require_fresh(state: SignatureState) -> None:
    """A request that must be signed: absent signature headers or a stale timestamp are 401."""
    if state == "missing":
        raise Rejected(401, "missing signature headers")
    if state == "stale":
        raise Rejected(401, "timestamp outside the replay window")


def parse_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object; anything else is a 400."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise Rejected(400, "body is not JSON") from err
    if not isinstance(obj, dict):
        raise Rejected(400, "body is not a JSON object")
    return obj


def decrypt_payload(obj: dict[str, Any], encrypt_key: str) -> tuple[dict[str, Any], bool]:
    """Unwrap `{"encrypt": ...}` (returns the plaintext object and True) or pass `obj` through."""
    if "encrypt" not in obj:
        return obj, False
    enc = obj["encrypt"]
    if not isinstance(enc, str) or not enc:
        raise Rejected(400, "encrypt is not a string")
    if not encrypt_key:
        raise Rejected(400, "encrypted body but no lark.encrypt_key configured")
    try:
        plain = crypto.decrypt(enc, encrypt_key)
    except crypto.DecryptError as err:
        raise Rejected(400, str(err)) from err
    return parse_object(plain), True


def payload_token(payload: dict[str, Any]) -> object:
    """The verification token a payload carries: v2 `header.token`, else top-level `token`."""
    header = payload.get("header")
    if payload.get("schema") and isinstance(header, dict):
        return header.get("token")
    return payload.get("token")


def check_token(payload: dict[str, Any], verification_token: str) -> bool:
    """True when a configured token matched; 403 when it is configured and does not match."""
    if not verification_token:
        return False
    if not crypto.tokens_equal(verification_token, payload_token(payload)):
        raise Rejected(403, "verification token mismatch")
    return True


def challenge_answer(payload: dict[str, Any]) -> dict[str, Any] | None:
    """`{"challenge": ...}` when the payload is a url_verification request, else None."""
    if payload.get("type") != URL_VERIFICATION:
        return None
    challenge = payload.get("challenge")
    if not isinstance(challenge, str):
        raise Rejected(400, "url_verification without a challenge string")
    return {"challenge": challenge}


def parse_envelope(payload: dict[str, Any]) -> dict[str, Any] | None:
    """Validate a schema 2.0 envelope (None for a legacy v1 event); strips `header.token`."""
    if payload.get("schema") != "2.0":
        if isinstance(payload.get("event"), dict) and ("uuid" in payload or "type" in payload):
            return None  # v1 (legacy) event: well-formed but not handled
        raise Rejected(400, "not a schema 2.0 event")
    header = payload.get("header")
    if not isinstance(header, dict):
        raise Rejected(400, "missing header")
    for key in ("event_id", "event_type"):
        if not isinstance(header.get(key), str) or not header[key]:
            raise Rejected(400, f"missing header.{key}")
    if not isinstance(payload.get("event"), dict):
        raise Rejected(400, "missing event")
    # The verification token has no use past this point; keep it out of logs and queues.
    envelope = dict(payload)
    envelope["header"] = {k: v for k, v in header.items() if k != "token"}
    return envelope


def _authenticate(
    raw: bytes, sig: Mapping[str, str], lark: LarkConfig, now: float
) -> tuple[dict[str, Any], SignatureState, dict[str, Any] | None]:
    """Steps shared by both endpoints: returns (payload, signature state, challenge answer)."""
    check_size(raw)
    key = lark.encrypt_key.get_secret_value()
    token = lark.verification_token.get_secret_value()
    state = signature_state(raw, sig, key, now, lark.replay_window_seconds)
    payload, decrypted = decrypt_payload(parse_object(raw), key)
    token_ok = check_token(payload, token)
    answer = challenge_answer(payload)
    if answer is not None:
        if (key or token) and not (decrypted or token_ok):
            raise Rejected(403, "unauthenticated url_verification")
        return payload, state, answer
    if not (key or token):
        # Secure by default: without either secret anyone who reaches the port could pose as
        # the owner (or click Approve); the challenge above still works so setup can finish.
        raise Rejected(403, UNAUTHENTICATED)
    _require_fresh(state)
    return payload, state, None


def _authenticate_v1(
    raw: bytes, sig: Mapping[str, str], lark: LarkConfig, now: float
) -> dict[str, Any]:
    """The v1 card chain up to the payload: size, SHA-1 signature, replay window, JSON, decrypt."""
    check_size(raw)
    token = lark.verification_token.get_secret_value()
    if not token:  # signature_state would call an unkeyed request "off"; v1 has no other proof
        raise Rejected(401, "a v1 card callback is signed with lark.verification_token: set it")
    window = lark.replay_window_seconds
    _require_fresh(signature_state(raw, sig, token, now, window, hashlib.sha1))
    return decrypt_payload(parse_object(raw), lark.encrypt_key.get_secret_value())[0]


def _v1_outcome(payload: dict[str, Any], nonce: str) -> WebhookOutcome:
    """A verified v1 payload's answer: its click as a v2 envelope, or 200 ignored without one."""
    envelope = card_v1.v1_envelope(payload, nonce[:64])
    if envelope is None:
        return WebhookOutcome(200, {}, reason="v1 card callback without a click; ignored")
    return WebhookOutcome(200, {}, envelope=envelope, signed=True)


def _run(
    raw: bytes, headers: Mapping[str, str], lark: LarkConfig, now: float, card: bool
) -> WebhookOutcome:
    sig = signature_headers(headers)
    # Only the card endpoint takes v1 callbacks, told apart by their SHA-1 signature length.
    v1 = card and card_v1.is_v1_signature(sig.get(H_SIGNATURE, ""))
    try:
        if v1:
            return _v1_outcome(_authenticate_v1(raw, sig, lark, now), sig[H_NONCE])
        payload, state, answer = _authenticate(raw, sig, lark, now)
        if answer is not None:
            return WebhookOutcome(200, answer, reason=URL_VERIFICATION)
        envelope = parse_envelope(payload)
    except Rejected as err:
        return WebhookOutcome(err.status, {"msg": err.reason}, reason=err.reason)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        # Belt and braces: a malformed body must never become a 5xx (Lark would retry it).
        return WebhookOutcome(400, {"msg": "malformed request"}, reason="malformed request")
    ok_body: dict[str, Any] = {} if card else {"msg": "success"}
    if envelope is None:
        if card:
            return WebhookOutcome(400, {"msg": "card callbacks must be schema 2.0"}, reason="v1")
        return WebhookOutcome(200, ok_body, reason="legacy v1 event ignored")
    if card and envelope["header"]["event_type"] != CARD_ACTION_TRIGGER:
        return WebhookOutcome(200, ok_body, reason="not a card action; ignored")
    return WebhookOutcome(200, ok_body, envelope=envelope, signed=state == "ok")


def verify_event_request(
    raw: bytes, headers: Mapping[str, str], lark: LarkConfig, now: float
) -> WebhookOutcome:
    """Run the chain for `POST /lark/events`; 200 with `envelope` set means: dedupe and enqueue."""
    return _run(raw, headers, lark, now, card=False)


def verify_card_request(
    raw: bytes, headers: Mapping[str, str], lark: LarkConfig, now: float
) -> WebhookOutcome:
    """Run the chain for `POST /lark/card` (`card.action.trigger`, same signature and crypto;
    a v1 callback, told by its SHA-1 signature, takes the v1 chain)."""
    return _run(raw, headers, lark, now, card=True)
