"""The webhook verification chain: challenge, signature, replay window, token, envelope, caps."""

from __future__ import annotations

import json
import time

import pytest

from larkbot.config import LarkConfig
from larkbot.lark.arrival import webhook
from larkbot.lark.arrival.crypto import signature
from larkbot.lark.arrival.webhook import verify_card_request, verify_event_request
from tests.fakes.lark_events import challenge, envelope, lark_request

KEY, TOKEN = "encrypt-key-1", "verify-token-1"
NOW = 1_800_000_000.0


def cfg(key: str = "", token: str = "") -> LarkConfig:
    return LarkConfig(app_id="cli_test", encrypt_key=key, verification_token=token)


def message_event(token: str = TOKEN) -> dict:
    return envelope("im.message.receive_v1", {"message": {"message_id": "om_1"}}, token=token)


# ---- url_verification ---------------------------------------------------------------------
def test_plain_challenge_without_any_credentials_is_answered() -> None:
    raw, headers = lark_request(challenge())
    out = verify_event_request(raw, headers, cfg(), NOW)
    assert (out.status, out.body, out.envelope) == (200, {"challenge": "challenge-123"}, None)


def test_plain_challenge_with_matching_token() -> None:
    raw, headers = lark_request(challenge(TOKEN))
    assert verify_event_request(raw, headers, cfg(token=TOKEN), NOW).status == 200


def test_plain_challenge_with_wrong_token_is_refused() -> None:
    raw, headers = lark_request(challenge("nope"))
    out = verify_event_request(raw, headers, cfg(token=TOKEN), NOW)
    assert out.status == 403 and "challenge" not in out.body


def test_plain_challenge_when_a_key_is_configured_is_refused() -> None:
    raw, headers = lark_request(challenge())
    assert verify_event_request(raw, headers, cfg(key=KEY), NOW).status == 403


def test_encrypted_challenge_unsigned_and_stale_is_answered() -> None:
    raw, headers = lark_request(challenge(TOKEN), encrypt_key=KEY, sign=False)
    out = verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW)
    assert out.body == {"challenge": "challenge-123"}
    raw, headers = lark_request(challenge(TOKEN), encrypt_key=KEY, timestamp=NOW - 86400)
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 200


def test_encrypted_challenge_with_the_wrong_key_is_refused() -> None:
    raw, headers = lark_request(challenge(), encrypt_key="other", sign=False)
    assert verify_event_request(raw, headers, cfg(key=KEY), NOW).status == 400


def test_node_sdk_encrypted_challenge_vector() -> None:
    from tests.test_lark_crypto import TV2_CIPHERTEXT, TV2_KEY

    raw = json.dumps({"encrypt": TV2_CIPHERTEXT}).encode()
    out = verify_event_request(raw, {}, cfg(TV2_KEY, "iRdCP2WwXNBXRM3mGLqhrgch3cn0gbT6"), NOW)
    assert out.body == {"challenge": "5634b122-c042-4634-bc7f-b07a3c3e77ad"}


# ---- events -------------------------------------------------------------------------------
def test_signed_encrypted_event_is_accepted_and_token_stripped() -> None:
    event = message_event()
    raw, headers = lark_request(event, encrypt_key=KEY, timestamp=NOW)
    out = verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW)
    assert (out.status, out.body) == (200, {"msg": "success"})
    assert out.envelope is not None and out.envelope["event"] == event["event"]
    assert out.event_type == "im.message.receive_v1"
    assert out.event_id == event["header"]["event_id"]
    assert "token" not in out.envelope["header"]


def test_bad_signature_is_refused() -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW)
    headers["X-Lark-Signature"] = "0" * 64
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 401


def test_tampered_body_is_refused() -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW)
    assert verify_event_request(raw + b" ", headers, cfg(KEY, TOKEN), NOW).status == 401


@pytest.mark.parametrize("skew", [-301, 301, -86400])
def test_stale_timestamp_is_refused(skew: int) -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW + skew)
    out = verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW)
    assert out.status == 401 and out.envelope is None


def test_timestamp_inside_window_and_in_milliseconds_is_fine() -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW - 299)
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 200
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW * 1000)
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 200


def test_unsigned_event_with_key_configured_is_refused() -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, sign=False)
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 401


def test_partial_signature_headers_are_refused() -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW)
    del headers["X-Lark-Request-Nonce"]
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 401


def test_wrong_token_is_refused_plain_and_encrypted() -> None:
    raw, headers = lark_request(message_event("wrong"))
    assert verify_event_request(raw, headers, cfg(token=TOKEN), NOW).status == 403
    raw, headers = lark_request(message_event("wrong"), encrypt_key=KEY, timestamp=NOW)
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 403


@pytest.mark.parametrize("case", [str.lower, str.upper, lambda h: h])
def test_header_names_are_case_insensitive(case) -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW)
    headers = {case(k): v for k, v in headers.items()}
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 200


def test_event_without_any_configured_secret_is_refused() -> None:
    """Regression: with no encrypt key and no token, anyone could post events as the owner."""
    raw, headers = lark_request(message_event(""))
    outcome = verify_event_request(raw, headers, cfg(), NOW)
    assert outcome.status == 403 and outcome.envelope is None
    assert "lark.verification_token" in outcome.body["msg"]
    card = envelope("card.action.trigger", {"operator": {"open_id": "ou_x"}, "action": {}})
    card_raw, card_headers = lark_request(card)
    assert verify_card_request(card_raw, card_headers, cfg(), NOW).status == 403


def test_challenge_still_answered_without_secrets_so_setup_can_finish() -> None:
    raw, headers = lark_request(challenge("", "c1"))
    assert verify_event_request(raw, headers, cfg(), NOW).body == {"challenge": "c1"}


def test_encrypted_body_without_configured_key_is_400() -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW)
    assert verify_event_request(raw, headers, cfg(token=TOKEN), NOW).status == 400


def test_body_cap_is_413() -> None:
    raw = b'{"x":"' + b"a" * webhook.MAX_BODY_BYTES + b'"}'
    assert verify_event_request(raw, {}, cfg(), NOW).status == 413


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   ",
        b"not json",
        b"[1,2]",
        b'"str"',
        b"{}",
        b'{"encrypt": 5}',
        b'{"encrypt": ""}',
        b'{"schema": "2.0"}',
        b'{"schema": "2.0", "header": {"event_type": "x"}, "event": {}}',
        b'{"schema": "2.0", "header": {"event_id": "e"}, "event": {}}',
        b'{"schema": "2.0", "header": {"event_id": "e", "event_type": "x"}, "event": []}',
        b'{"schema": "2.0", "header": "h", "event": {}}',
        b'{"type": "url_verification", "challenge": 5}',
        b"\xff\xfe\x00garbage",
        b"[" * 100_000,
    ],
)
def test_malformed_bodies_are_400(raw: bytes) -> None:
    """Signed (so they pass authentication) yet malformed: the parser answers 400, never 5xx."""
    nonce, ts = "n-1", str(int(NOW))
    headers = {
        "X-Lark-Request-Timestamp": ts,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": signature(ts, nonce, KEY, raw),
    }
    assert verify_event_request(raw, headers, cfg(KEY), NOW).status == 400


def test_legacy_v1_event_is_acknowledged_and_ignored() -> None:
    raw = json.dumps({"uuid": "u", "token": TOKEN, "type": "event_callback", "event": {}}).encode()
    out = verify_event_request(raw, {}, cfg(token=TOKEN), NOW)
    assert (out.status, out.envelope) == (200, None)


# ---- card callbacks -------------------------------------------------------------------------
def test_card_action_is_verified_like_events() -> None:
    event = {"operator": {"open_id": "ou_1"}, "action": {"value": {"k": "v"}}, "token": "c-1"}
    raw, headers = lark_request(
        envelope("card.action.trigger", event, token=TOKEN), encrypt_key=KEY, timestamp=NOW
    )
    out = verify_card_request(raw, {k.lower(): v for k, v in headers.items()}, cfg(KEY, TOKEN), NOW)
    assert (out.status, out.body) == (200, {})
    assert out.envelope is not None and out.envelope["event"]["token"] == "c-1"
    headers["X-Lark-Signature"] = "f" * 64
    assert verify_card_request(raw, headers, cfg(KEY, TOKEN), NOW).status == 401


def test_card_endpoint_answers_challenge_and_ignores_other_events() -> None:
    raw, headers = lark_request(challenge(TOKEN), encrypt_key=KEY, sign=False)
    assert verify_card_request(raw, headers, cfg(KEY, TOKEN), NOW).body == {
        "challenge": "challenge-123"
    }
    raw, headers = lark_request(message_event(), encrypt_key=KEY, timestamp=NOW)
    out = verify_card_request(raw, headers, cfg(KEY, TOKEN), NOW)
    assert (out.status, out.envelope) == (200, None)


def test_legacy_card_callback_is_refused() -> None:
    raw = json.dumps({"open_id": "ou", "action": {"value": {}}, "token": TOKEN}).encode()
    assert verify_card_request(raw, {}, cfg(token=TOKEN), NOW).status == 400


def test_now_defaults_are_real_seconds() -> None:
    raw, headers = lark_request(message_event(), encrypt_key=KEY)
    assert verify_event_request(raw, headers, cfg(KEY, TOKEN), time.time()).status == 200
