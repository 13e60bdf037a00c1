"""Approvals in groups go to the person who must click only; a stale one is buzzed once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cards import validate_lark_card
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, bot_mention, message_event, settings_for
from tests.test_cards_approval_e2e import approval_id_of, post_click


def setup(home: Path, lark: FakeLark, llm: FakeLLM, **over: Any) -> tuple[Any, Path]:
    """A directory the model wants to delete (an owner's call that needs an approval)."""
    victim = home / "victim"
    victim.mkdir()
    llm.reply_tools(("shell", {"command": f"rm -rf {victim}"})).reply_text("Deleted.")
    settings = settings_for(
        home, lark.domain, llm.base_url, lark={"approval_timeout_seconds": 30.0, **over}
    )
    return settings, victim


def group_event(message_id: str, chat_id: str = "oc_group", **extra: Any) -> dict[str, Any]:
    """The owner @-mentions the bot in a group."""
    return message_event(
        "@_user_1 delete victim",
        chat_id=chat_id,
        chat_type="group",
        message_id=message_id,
        mentions=[bot_mention()],
        **extra,
    )


def cards_with(fake: FakeLark, needle: str) -> list[dict[str, Any]]:
    """Messages (cards) the bot sent whose JSON contains `needle`."""
    return [m for m in fake.sent if needle in json.dumps(m["body"], ensure_ascii=False)]


async def test_group_approval_is_ephemeral_to_the_owner_and_the_group_sees_one_line(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, victim = setup(home, fake_lark, fake_llm)
    fake_lark.add_message("om_g1", "oc_group")
    async with Served(settings) as s:
        await s.post_event(group_event("om_g1"))
        await fake_lark.wait_for(lambda: len(fake_lark.ephemerals) == 1)
        (eph,) = fake_lark.ephemerals
        assert (eph["chat_id"], eph["open_id"]) == ("oc_group", OWNER)
        assert validate_lark_card(eph["card"]) == []
        await fake_lark.wait_for(lambda: len(cards_with(fake_lark, "Approval pending")) == 1)
        assert not cards_with(fake_lark, '"approval"')  # no buttons in the group's messages
        assert all(m["receive_id_type"] != "open_id" for m in fake_lark.sent)  # no DM

        answer = await post_click(s, approval_id_of(eph["card"]), "approve")
        assert answer["toast"]["type"] == "success"
        await fake_lark.wait_for(lambda: "Deleted." in fake_lark.texts())
        assert await s.app.idle(30)
        assert not victim.exists()
    assert eph["deleted"]  # ephemeral/v1/delete after the click
    (notice,) = cards_with(fake_lark, "Approval pending")
    outcome = [p for p in fake_lark.patches if p["message_id"] == notice["message_id"]]
    assert outcome and "Approved" in json.dumps(outcome[-1]["body"], ensure_ascii=False)
    assert not fake_lark.urgents  # lark.urgent_after_minutes (10) never came


async def test_topic_group_and_refused_ephemeral_fall_back_to_a_dm(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, _ = setup(home, fake_lark, fake_llm)
    fake_llm.reply_tools(("shell", {"command": f"rm -rf {home / 'victim'}"}))
    fake_llm.reply_text("Deleted too.")
    fake_lark.add_message("om_t1", "oc_topic", thread_id="omt_1")
    fake_lark.add_message("om_r1", "oc_refusing")
    fake_lark.topic_chats.add("oc_refusing")  # ephemeral/v1/send answers an error there
    async with Served(settings) as s:
        for n, event in enumerate(
            [
                group_event("om_t1", "oc_topic", thread_id="omt_1"),
                group_event("om_r1", "oc_refusing"),
            ]
        ):
            await s.post_event(event)
            await fake_lark.wait_for(lambda n=n: len(cards_with(fake_lark, '"approval"')) == n + 1)
            dm = cards_with(fake_lark, '"approval"')[-1]
            assert (dm["receive_id"], dm["receive_id_type"]) == (OWNER, "open_id")
            assert "Asked in a group chat" in json.dumps(dm["body"])
            await post_click(s, approval_id_of(dm["body"]), "deny")
            assert await s.app.idle(30)
        assert not fake_lark.ephemerals  # tried in the refusing group only, never shown
        tried = [r for r in fake_lark.requests if r.path == "/open-apis/ephemeral/v1/send"]
        assert len(tried) == 1 and tried[0].json["chat_id"] == "oc_refusing"
    assert len(cards_with(fake_lark, "Approval pending")) == 2
    lines = [json.dumps(p["body"], ensure_ascii=False) for p in fake_lark.patches]
    assert sum("Denied" in line for line in lines) >= 2


async def test_a_stale_approval_is_buzzed_to_its_owner_once(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, _ = setup(home, fake_lark, fake_llm, urgent_after_minutes=0.002)  # 0.12 s
    fake_lark.add_message("om_g2", "oc_group")
    async with Served(settings) as s:
        await s.post_event(group_event("om_g2"))
        await fake_lark.wait_for(lambda: len(fake_lark.urgents) == 1)
        (buzz,) = fake_lark.urgents
        assert buzz["user_id_list"] == [OWNER]
        (notice,) = cards_with(fake_lark, "Approval pending")
        assert buzz["message_id"] == notice["message_id"]  # the group's line (not ephemeral)
        await post_click(s, approval_id_of(fake_lark.ephemerals[0]["card"]), "approve")
        assert await s.app.idle(30)
    assert len(fake_lark.urgents) == 1
    assert all(
        "urgent_sms" not in r.path and "urgent_phone" not in r.path for r in fake_lark.requests
    )


async def test_a_stopped_turn_removes_its_ephemeral_card_and_closes_the_line(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, victim = setup(home, fake_lark, fake_llm)
    fake_lark.add_message("om_g3", "oc_group")
    async with Served(settings) as s:
        await s.post_event(group_event("om_g3"))
        await fake_lark.wait_for(lambda: len(cards_with(fake_lark, "Approval pending")) == 1)
        stop = message_event(
            "@_user_1 /stop", chat_id="oc_group", chat_type="group", mentions=[bot_mention()]
        )
        await s.post_event(stop)
        await fake_lark.wait_for(lambda: fake_lark.ephemerals[0]["deleted"])
        (notice,) = cards_with(fake_lark, "Approval pending")
        await fake_lark.wait_for(
            lambda: any(p["message_id"] == notice["message_id"] for p in fake_lark.patches)
        )
        assert await s.app.idle(30)
    assert victim.exists()
    outcome = [p for p in fake_lark.patches if p["message_id"] == notice["message_id"]]
    assert "Not answered in time" in json.dumps(outcome[-1]["body"], ensure_ascii=False)


async def test_a_stale_approval_in_a_dm_buzzes_the_card_itself(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings, _ = setup(home, fake_lark, fake_llm, urgent_after_minutes=0.002)
    async with Served(settings) as s:
        await s.post_event(message_event("delete victim", message_id="om_d1"))
        await fake_lark.wait_for(lambda: len(fake_lark.urgents) == 1)
        (card,) = cards_with(fake_lark, '"approval"')
        assert fake_lark.urgents == [{"message_id": card["message_id"], "user_id_list": [OWNER]}]
        assert card["reply_to"] == "om_d1" and not fake_lark.ephemerals
        await post_click(s, approval_id_of(card["body"]), "deny")
        assert await s.app.idle(30)
    assert not cards_with(fake_lark, "Approval pending")  # a DM needs no line
