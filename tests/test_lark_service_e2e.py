"""The Lark service end to end: signed events over real HTTP → App → FakeLLM → FakeLark replies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from larkbot.lark.api.render import reply_uuid
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, bot_mention, message_event, settings_for

REPLY = "POST /open-apis/im/v1/messages/{id}/reply"


def last_user_text(request: dict[str, Any]) -> str:
    """The user message the model saw last."""
    users = [m for m in request["messages"] if m["role"] == "user"]
    return str(users[-1]["content"])


async def test_dm_gets_a_reply(home: Path, fake_lark: FakeLark, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("hi there")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        event = message_event("hello", message_id="om_dm_1")
        assert await s.post_event(event) == (200, {"msg": "success"})
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await s.app.idle(30)
        assert await s.app.message_status("om_dm_1") == "done"
    sent = fake_lark.sent[0]
    assert (sent["msg_type"], sent["body"], sent["reply_to"]) == (
        "text",
        {"text": "hi there"},
        "om_dm_1",
    )
    assert sent["uuid"] == reply_uuid("om_dm_1", "a0")
    assert last_user_text(fake_llm.requests[0]) == "hello"


async def test_group_silence_and_mention(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("**Sure**, here is a list:\n\n- one\n- two")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        group = {"chat_id": "oc_group", "chat_type": "group"}
        assert (await s.post_event(message_event("no mention", **group)))[0] == 200
        someone = [bot_mention(1, "ou_tom", "Tom")]
        assert (await s.post_event(message_event("@_user_1 hi", mentions=someone, **group)))[
            0
        ] == 200
        assert (await s.post_event(message_event("@_all meeting", **group)))[0] == 200
        # Ignored messages are dropped before the 200: nothing is queued, the model is not asked.
        assert await s.app.idle(0) and fake_llm.requests == []

        event = message_event("@_user_1 what's up?", mentions=[bot_mention()], **group)
        assert (await s.post_event(event))[0] == 200
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
    assert len(fake_llm.requests) == 1
    # attributed (no contact entry in the fake: the stable fallback label)
    assert last_user_text(fake_llm.requests[0]) == "[user-owner · owner] what's up?"
    card = fake_lark.sent[0]
    assert card["msg_type"] == "interactive" and card["body"]["schema"] == "2.0"
    assert card["body"]["body"]["elements"][0]["content"].startswith("**Sure**")


async def test_long_connection_hand_off_feeds_the_same_pipeline(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    from larkbot.lark.arrival.ws import LarkLongConnection

    fake_llm.reply_text("via the long connection")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        loop = asyncio.get_running_loop()
        conn = LarkLongConnection("cli_test", "secret", fake_lark.domain, s.app.submit, loop=loop)
        event = message_event("hi over ws", message_id="om_ws")
        event["header"].pop("token")  # the long connection carries no verification token
        payload = json.dumps(event).encode()
        result = await asyncio.to_thread(conn.handle_payload, payload)  # from the SDK's thread
        assert result == "queued"
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
        assert await asyncio.to_thread(conn.handle_payload, payload) == "duplicate"
    assert fake_lark.texts() == ["via the long connection"]
