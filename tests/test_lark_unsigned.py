"""Webhook mode without an encrypt key: events carry no signature, so none gets owner powers.

An unsigned event dated 2001, from the owner's open_id with the right verification token,
once ran shell as the owner. Its freshness cannot be checked, so now its turn runs as nobody's
owner: side effects are refused through the policy, `/claim` is refused, card clicks do
nothing, and `serve` says so loudly at start.
"""

from __future__ import annotations

import json
from pathlib import Path

from structlog.testing import capture_logs

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.lark_harness import TOKEN, Served, message_event, settings_for


def _dated_2001(envelope: dict[str, object]) -> bytes:
    stamp = "978307200000"  # 2001-01-01, in ms
    envelope["header"]["create_time"] = stamp  # type: ignore[index]
    envelope["event"]["message"]["create_time"] = stamp  # type: ignore[index]
    return json.dumps(envelope).encode()


async def test_an_unsigned_owner_event_runs_no_side_effect(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    fake_llm.add(Reply(tool_calls=[FakeToolCall("shell", {"command": f"touch {marker}"})]))
    fake_llm.reply_text("finished")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, lark={"encrypt_key": ""})
    with capture_logs() as logs:
        async with Served(settings) as s:
            status, _ = await s.post_raw(_dated_2001(message_event("run it")))
            assert status == 200  # the token matched: accepted, but not trusted as the owner
            await fake_lark.wait_for(lambda: "finished" in fake_lark.texts(), 20)
            claim = message_event("/claim 12345678", sender="ou_someone")
            await s.post_raw(json.dumps(claim).encode())
            await fake_lark.wait_for(lambda: any("encrypt key" in t for t in fake_lark.texts()), 20)
            card = {
                "schema": "2.0",
                "header": {"event_id": "ev_card", "event_type": "card.action.trigger",
                           "token": TOKEN, "create_time": "978307200000"},
                "event": {"operator": {"open_id": "ou_owner"}, "action": {"value": {}}},
            }  # fmt: skip
            status, body = await s.post_raw(json.dumps(card).encode(), path="/lark/card")
    assert not marker.exists()
    tool_results = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert "only the bot's owner may use it" in tool_results[0]["content"]
    assert status == 200 and "encrypt key" in json.dumps(body)
    warnings = [e for e in logs if e["event"] == "lark_events_unsigned"]
    assert warnings and warnings[0]["log_level"] == "warning"
