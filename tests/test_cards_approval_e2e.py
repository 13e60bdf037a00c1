"""Approval cards end to end: an owner's `rm -rf` via shell waits for an Approve/Deny click."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

from cards import validate_lark_card
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, TOKEN, Served, message_event, seal, settings_for

_ids = itertools.count(1)


def click(approval_id: str, decision: str, operator: str = OWNER) -> dict[str, Any]:
    """A card.action.trigger envelope for an approval button."""
    n = next(_ids)
    return {
        "schema": "2.0",
        "header": {
            "event_id": f"ev_card_{n}",
            "event_type": "card.action.trigger",
            "token": TOKEN,
            "create_time": str(int(time.time() * 1000)),
            "app_id": "cli_test",
        },
        "event": {
            "operator": {"open_id": operator},
            "token": f"c-{n}",
            "action": {"tag": "button", "value": {"approval": approval_id, "decision": decision}},
            "host": "im_message",
            "context": {"open_message_id": "om_x", "open_chat_id": "oc_dm"},
        },
    }


async def post_click(s: Served, approval_id: str, decision: str, operator: str = OWNER) -> Any:
    """POST the click to /lark/card, encrypted and signed like Lark; the JSON answer."""
    body, headers = seal(click(approval_id, decision, operator))
    status, answer = await s.post_raw(body, headers, path="/lark/card")
    assert status == 200
    return answer


def approval_cards(fake: FakeLark) -> list[dict[str, Any]]:
    """Approval cards sent so far (in groups: ephemeral cards, only the clicker sees them)."""
    sent = [m["body"] for m in fake.sent if m["msg_type"] == "interactive"]
    cards = sent + [e["card"] for e in fake.ephemerals]
    return [c for c in cards if "Approval" in json.dumps(c.get("header", {}))]


def approval_id_of(card: dict[str, Any]) -> str:
    """The approval id in the card's Approve button."""
    text = json.dumps(card)
    start = text.index('"approval": "') + len('"approval": "')
    return text[start : text.index('"', start)]


def setup(
    home: Path, lark: FakeLark, llm: FakeLLM, timeout: float = 30.0, streaming: bool = False
) -> tuple[Any, Path]:
    """Settings with a short approval timeout, and a directory the model wants to delete."""
    victim = home / "victim"
    victim.mkdir()
    (victim / "data.txt").write_text("precious")
    llm.reply_tools(("shell", {"command": f"rm -rf {victim}"}))
    settings = settings_for(
        home,
        lark.domain,
        llm.base_url,
        lark={"approval_timeout_seconds": timeout, "streaming": streaming},
    )
    return settings, victim


async def test_owner_approves_and_the_command_runs(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, victim = setup(home, fake_lark, fake_llm)
    fake_llm.reply_text("Deleted.")
    async with Served(settings) as s:
        await s.post_event(message_event("delete victim", message_id="om_rm_1"))
        await fake_lark.wait_for(lambda: len(approval_cards(fake_lark)) == 1)
        card = approval_cards(fake_lark)[0]
        assert validate_lark_card(card) == []
        assert f"rm -rf {victim}" in json.dumps(card)
        approval = approval_id_of(card)

        other = await post_click(s, approval, "approve", operator="ou_stranger")
        assert other["toast"]["type"] == "error" and "card" not in other
        assert victim.exists()

        answer = await post_click(s, approval, "approve")
        assert answer["toast"]["type"] == "success"
        assert validate_lark_card(answer["card"]["data"]) == []
        assert "Approved" in json.dumps(answer["card"]["data"], ensure_ascii=False)
        await fake_lark.wait_for(lambda: "Deleted." in fake_lark.texts())
        assert await s.app.idle(30)
        assert not victim.exists()

        again = await post_click(s, approval, "deny")
        assert again["toast"]["content"] == "Already approved."
    assert fake_lark.sent[0]["reply_to"] == "om_rm_1"


async def test_owner_denies_and_nothing_runs(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, victim = setup(home, fake_lark, fake_llm)
    fake_llm.reply_text("OK, I left it alone.")
    async with Served(settings) as s:
        await s.post_event(message_event("delete victim", message_id="om_rm_2"))
        await fake_lark.wait_for(lambda: len(approval_cards(fake_lark)) == 1)
        answer = await post_click(s, approval_id_of(approval_cards(fake_lark)[0]), "deny")
        assert "Denied" in json.dumps(answer["card"]["data"], ensure_ascii=False)
        await fake_lark.wait_for(lambda: "OK, I left it alone." in fake_lark.texts())
    assert victim.exists()
    tool_result = next(m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool")
    assert "denied" in tool_result["content"]


async def test_no_click_before_the_timeout_means_refused_and_expired(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, victim = setup(home, fake_lark, fake_llm, timeout=0.3)
    fake_llm.reply_text("It was not approved in time.")
    async with Served(settings) as s:
        await s.post_event(message_event("delete victim", message_id="om_rm_3"))
        await fake_lark.wait_for(lambda: "It was not approved in time." in fake_lark.texts())
        approval = approval_id_of(approval_cards(fake_lark)[0])
        late = await post_click(s, approval, "approve")
        assert late["toast"]["content"] == "This approval has expired."
        assert "Expired" in json.dumps(late["card"]["data"], ensure_ascii=False)
        assert await s.app.idle(30)
    assert victim.exists()
    expired = [json.loads(p["content"]) for p in fake_lark.patches]
    assert any("Expired" in json.dumps(c, ensure_ascii=False) for c in expired)
    tool_result = next(m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool")
    assert "did not approve within 0.3 s" in tool_result["content"]


async def test_unknown_click_is_answered_at_once(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings) as s:
        assert (await post_click(s, "nope", "approve"))["toast"][
            "content"
        ] == "This approval has expired."
        body, headers = seal({**click("x", "approve"), "event": {"action": {"value": {"k": 1}}}})
        assert await s.post_raw(body, headers, path="/lark/card") == (200, {})


async def test_streaming_card_shows_the_wait_for_approval(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, victim = setup(home, fake_lark, fake_llm, streaming=True)
    fake_llm.reply_text("Deleted.")

    def waiting_shown() -> bool:
        cards = fake_lark.cardkit.cards.values()
        return any("🔐 **shell**" in c.elements.get("stream", "") for c in cards)

    async with Served(settings) as s:
        await s.post_event(message_event("delete victim", message_id="om_rm_4"))
        await fake_lark.wait_for(waiting_shown, timeout=10)
        await post_click(s, approval_id_of(approval_cards(fake_lark)[0]), "approve")
        await fake_lark.wait_for(
            lambda: any(not c.streaming_mode for c in fake_lark.cardkit.cards.values())
        )
        assert await s.app.idle(30)
    (card,) = fake_lark.cardkit.cards.values()
    assert card.elements["stream"].endswith("Deleted.") and "✓ **shell**" in card.elements["stream"]
    assert not victim.exists()
