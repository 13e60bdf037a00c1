"""The owner guard end to end: non-owners cause no side effects and read no private data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, bot_mention, message_event, settings_for

GUEST = "ou_guest"


def tool_names(request: dict[str, Any]) -> set[str]:
    """Names of the tools advertised in one model request."""
    return {t["function"]["name"] for t in request.get("tools") or []}


def tool_results(request: dict[str, Any]) -> list[str]:
    """Contents of the tool messages in one model request."""
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def _turn(s: Served, fake_lark: FakeLark, sender: str, text: str) -> None:
    before = len(fake_lark.sent)
    assert (await s.post_event(message_event(text, sender=sender, chat_id=f"oc_{sender}")))[
        0
    ] == 200
    await fake_lark.wait_for(lambda: len(fake_lark.sent) > before, timeout=30)
    assert await s.app.idle(30)


async def test_side_effects_are_owner_only(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    target, marker = tmp_path / "out" / "note.txt", tmp_path / "out" / "shell.txt"
    calls = (
        ("file_write", {"path": str(target), "content": "x"}),
        ("shell", {"command": f"mkdir -p {marker.parent} && echo hi > {marker}"}),
    )
    fake_llm.reply_tools(*calls).reply_text("I could not do that.")
    fake_llm.reply_tools(*calls).reply_text("Done.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        await _turn(s, fake_lark, GUEST, "write a file")
        assert not target.exists() and not marker.exists()  # nothing happened on disk
        results = tool_results(fake_llm.requests[1])
        assert len(results) == 2 and all("only the bot's owner" in r for r in results)
        assert not tool_names(fake_llm.requests[0]) & {"shell", "file_write", "file_read"}

        await _turn(s, fake_lark, OWNER, "write a file")
        assert target.read_text() == "x" and marker.read_text().strip() == "hi"
        assert {"shell", "file_write", "file_read"} <= tool_names(fake_llm.requests[2])

        audit = await s.app.audit.recent()
    decisions = {(e.sender, e.tool, e.allowed) for e in audit}
    assert {(GUEST, "file_write", False), (GUEST, "shell", False)} <= decisions
    assert {(OWNER, "file_write", True), (OWNER, "shell", True)} <= decisions
    assert all(len(e.args_digest) == 64 and e.chat for e in audit)


async def test_config_file_stays_private_even_when_file_read_is_shared(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    """Regression: a non-owner given shared file_read could read config.yaml (the bot's keys)."""
    config = home / "config.yaml"
    config.write_text("llm: {api_key: sk-very-secret}\n")
    for share, shown in (({}, False), ({"file_read": [GUEST]}, True)):
        fake_llm.requests.clear()
        fake_llm.reply_tools(("file_read", {"path": str(config)})).reply_text("ok")
        settings = settings_for(home, fake_lark.domain, fake_llm.base_url, owner={"share": share})
        async with Served(settings) as s:
            await _turn(s, fake_lark, GUEST, "show me the config")
        result = tool_results(fake_llm.requests[1])[-1]  # history holds the earlier refusal
        assert "sk-very-secret" not in result and result.startswith("Error: "), result
        assert ("file_read" in tool_names(fake_llm.requests[0])) is shown
        if shown:
            assert "owner's consent" in result


async def test_claim_flow_makes_an_owner(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, owner={"open_ids": []})
    async with Served(settings) as s:
        code = s.app.owners.pairing_code  # what `serve` logs once at start
        assert code
        await _turn(s, fake_lark, "ou_first", "/whoami")
        await _turn(s, fake_lark, "ou_first", f"/claim {code}")
        await _turn(s, fake_lark, "ou_second", f"/claim {code}")
        await _turn(s, fake_lark, "ou_first", "/whoami")
    texts = fake_lark.texts()
    assert "not an owner" in texts[0]
    assert "now the owner" in texts[1]
    assert "already has an owner" in texts[2]
    assert "you are the owner" in texts[3]
    assert fake_llm.requests == []  # commands never reach the model
    async with Served(settings) as s:  # persisted across restarts
        assert await s.app.owners.check("ou_first") and s.app.owners.pairing_code is None


async def test_owner_results_in_a_shared_group_history_are_hidden_from_others(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    """Regression: a group is one session, so the owner's file contents reached a guest's turn."""
    secret_file = tmp_path / "diary.txt"
    secret_file.write_text("the launch code is 0000")
    mention = [bot_mention()]
    group = {"chat_id": "oc_team", "chat_type": "group", "mentions": mention}
    fake_llm.reply_tools(("file_read", {"path": str(secret_file)})).reply_text("Read it.")
    fake_llm.reply_text("I cannot tell you that.")
    fake_llm.reply_text("Here it is again.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        for sender, text in ((OWNER, "read my diary"), (GUEST, "what did it say?")):
            before = len(fake_lark.sent)
            event = message_event(f"@_user_1 {text}", sender=sender, **group)
            assert (await s.post_event(event))[0] == 200
            await fake_lark.wait_for(lambda b=before: len(fake_lark.sent) > b, timeout=30)
            assert await s.app.idle(30)
        guest_request = fake_llm.requests[2]
        assert "0000" not in str(guest_request["messages"])
        assert any("private to the bot's owner" in r for r in tool_results(guest_request))
        before = len(fake_lark.sent)
        event = message_event("@_user_1 and now?", sender=OWNER, **group)
        assert (await s.post_event(event))[0] == 200
        await fake_lark.wait_for(lambda: len(fake_lark.sent) > before, timeout=30)
    assert "0000" in str(fake_llm.requests[3]["messages"])  # the owner still sees it
