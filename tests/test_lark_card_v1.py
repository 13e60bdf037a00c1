"""v1 card callbacks (older apps' message-card request URL): signed with the verification token
(sha1), verified as lark-oapi's CardActionHandler verifies them, and acted on like v2 clicks."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from lark_oapi.card.action_handler import CardActionHandler
from lark_oapi.core.model import RawRequest

from larkbot.config import LarkConfig
from larkbot.lark.arrival.webhook import verify_card_request
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, TOKEN, Served, message_event
from tests.test_cards_approval_e2e import approval_cards, approval_id_of
from tests.test_cards_approval_e2e import setup as approval_setup

NOW = 1_800_000_000.0


def v1_click(value: dict[str, Any], open_id: str = OWNER) -> dict[str, Any]:
    """A v1 card callback body, as older apps receive it (no schema; `token` updates the card)."""
    return {
        "open_id": open_id,
        "user_id": "u_1",
        "open_message_id": "om_card",
        "open_chat_id": "oc_dm",
        "tenant_key": "t_1",
        "token": "c-update-token",
        "action": {"tag": "button", "value": value},
    }


def v1_signed(payload: dict[str, Any], token: str = TOKEN, ts: float | None = None) -> Any:
    """The body and headers, signed sha1(timestamp + nonce + verification_token + body)."""
    body = json.dumps(payload).encode()
    stamp, nonce = str(int(time.time() if ts is None else ts)), "nonce-v1"
    sign = hashlib.sha1((stamp + nonce + token).encode() + body).hexdigest()
    headers = {
        "X-Lark-Request-Timestamp": stamp,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": sign,
        "Content-Type": "application/json",
    }
    return body, headers


def cfg(token: str = TOKEN, key: str = "") -> LarkConfig:
    return LarkConfig(app_id="cli_test", verification_token=token, encrypt_key=key)


def test_lark_oapi_accepts_the_same_signed_request() -> None:
    """The reference: lark-oapi's own CardActionHandler takes what the tests here sign."""
    body, headers = v1_signed(v1_click({"k": 1}))
    clicks: list[Any] = []
    handler = CardActionHandler.builder("", TOKEN).register(clicks.append).build()
    request = RawRequest()
    request.headers, request.body = headers, body
    assert handler.do(request).status_code == 200
    assert clicks[0].open_id == OWNER and clicks[0].action.value == {"k": 1}


def test_signed_v1_click_becomes_a_card_action_envelope() -> None:
    body, headers = v1_signed(v1_click({"approval": "a1", "decision": "approve"}), ts=NOW)
    out = verify_card_request(body, headers, cfg(key="also-set"), NOW)
    assert (out.status, out.signed) == (200, True)
    event = (out.envelope or {})["event"]
    assert event["operator"]["open_id"] == OWNER
    assert event["action"]["value"] == {"approval": "a1", "decision": "approve"}
    assert event["context"] == {"open_message_id": "om_card", "open_chat_id": "oc_dm"}


def test_bad_stale_or_unverifiable_v1_signatures_are_401() -> None:
    body, headers = v1_signed(v1_click({"k": 1}), ts=NOW)
    assert verify_card_request(body + b" ", headers, cfg(), NOW).status == 401  # tampered
    wrong, wrong_headers = v1_signed(v1_click({"k": 1}), token="another-token", ts=NOW)
    assert verify_card_request(wrong, wrong_headers, cfg(), NOW).status == 401
    assert verify_card_request(body, headers, cfg(), NOW + 3600).status == 401  # replayed later
    refused = verify_card_request(body, headers, cfg(token="", key="k"), NOW)
    assert refused.status == 401 and "verification_token" in refused.reason


async def test_v1_approve_click_runs_the_command_and_bad_signature_is_401(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, victim = approval_setup(home, fake_lark, fake_llm)
    fake_llm.reply_text("Deleted.")
    async with Served(settings) as s:
        await s.post_event(message_event("delete victim", message_id="om_v1"))
        await fake_lark.wait_for(lambda: len(approval_cards(fake_lark)) == 1)
        click = v1_click(
            {"approval": approval_id_of(approval_cards(fake_lark)[0]), "decision": "approve"}
        )

        body, headers = v1_signed(click)
        forged = {**headers, "X-Lark-Signature": "0" * 40}
        assert (await s.post_raw(body, forged, path="/lark/card"))[0] == 401
        assert victim.exists()

        status, answer = await s.post_raw(body, headers, path="/lark/card")
        assert status == 200
        assert "Approved" in json.dumps(answer, ensure_ascii=False)  # v1: the new card, bare
        assert "toast" not in answer and "card" not in answer
        await fake_lark.wait_for(lambda: "Deleted." in fake_lark.texts())
    assert not victim.exists()
