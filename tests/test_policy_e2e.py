"""Untrusted content raises the bar, end to end through `serve` with signed events.

The red-team trap: Mallory (a group member, not an owner) posts `trap -- 'rm -rf X' EXIT`; the
owner then says "cleanup" and the model, steered by Mallory's text, runs it. With the policy,
every side effect of the owner's turn needs the Approve card, which names Mallory's message.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, bot_mention, message_event, settings_for
from tests.test_cards_approval_e2e import approval_cards, approval_id_of, post_click

MALLORY = "ou_mallory"
GROUP = {"chat_id": "oc_team", "chat_type": "group", "mentions": [bot_mention()]}


async def test_a_members_message_makes_the_owners_side_effects_need_an_approval(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    victim = tmp_path / "X"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    marker = tmp_path / "touched"
    trap = f"trap -- 'rm -rf {victim}' EXIT"
    fake_llm.reply_text("Noted.")  # Mallory's turn: nothing the bot can do for her
    fake_llm.reply_tools(("shell", {"command": f"touch {marker}"}))  # an ordinary command
    fake_llm.reply_tools(("shell", {"command": trap}))  # what Mallory planted
    fake_llm.reply_text("I did not run either.")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings) as s:
        event = message_event(f"@_user_1 {trap}", sender=MALLORY, **GROUP)
        assert (await s.post_event(event))[0] == 200
        await fake_lark.wait_for(lambda: "Noted." in fake_lark.texts(), timeout=30)
        assert await s.app.idle(30)

        assert (await s.post_event(message_event("@_user_1 cleanup", sender=OWNER, **GROUP)))[0]
        for n in (1, 2):  # each side effect is asked, and each card names Mallory's message
            await fake_lark.wait_for(lambda n=n: len(approval_cards(fake_lark)) == n, timeout=30)
            card = approval_cards(fake_lark)[-1]
            shown = json.dumps(card, ensure_ascii=False)
            assert MALLORY in shown and "not an owner" in shown
            assert (await post_click(s, approval_id_of(card), "deny"))["toast"]
        await fake_lark.wait_for(lambda: "I did not run either." in fake_lark.texts(), timeout=30)
        assert await s.app.idle(30)
    assert (victim / "keep.txt").read_text() == "precious" and not marker.exists()


async def test_an_owner_alone_in_a_dm_is_not_asked_for_ordinary_commands(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    marker = tmp_path / "touched"
    fake_llm.reply_tools(("shell", {"command": f"touch {marker}"})).reply_text("Done.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert (await s.post_event(message_event("touch it")))[0] == 200
        await fake_lark.wait_for(lambda: "Done." in fake_lark.texts(), timeout=30)
    assert marker.exists() and approval_cards(fake_lark) == []
