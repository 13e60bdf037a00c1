"""Document comments that @-mention the bot: one reply in the thread, the commenter's token."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.lark_events import envelope
from tests.fakes.lark_native import seed_comment, text_reply
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, Reply
from tests.lark_harness import OWNER, TOKEN, Served, settings_for
from tests.workspace_access import workspace_access

DOC = "doxcnREPORT"


def comment_event(
    reply_id: str,
    sender: str = OWNER,
    event_id: str | None = None,
    mentioned: bool = True,
    comment_id: str = "c1",
) -> dict[str, Any]:
    """A drive.notice.comment_add_v1 envelope (the wire shape lark-oapi documents)."""
    meta = {
        "file_token": DOC,
        "file_type": "docx",
        "from_user_id": {"open_id": sender},
        "to_user_id": {"open_id": "ou_bot"},
        "notice_type": "comment_add",
    }
    event = {
        "comment_id": comment_id,
        "reply_id": reply_id,
        "is_mentioned": mentioned,
        "notice_meta": meta,
    }
    return envelope("drive.notice.comment_add_v1", event, token=TOKEN, event_id=event_id)


def seed(fake: FakeLark) -> None:
    """A comment on a passage, asking the bot; the document's text."""
    question = text_reply("r1", OWNER, "@larkbot is this number right?")
    seed_comment(fake, DOC, "c1", "Q3 revenue grew 12%", [question])
    fake.docs[DOC] = "Quarterly report. Q3 revenue: 10.4M, Q2: 9.3M."


async def test_a_comment_question_is_answered_once_in_its_thread(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    seed(fake_lark)
    fake_lark.user_tokens["u-owner"] = {"open_id": OWNER, "name": "Owner", "scopes": []}
    fake_llm.reply_text("It is about 11.8%, not 12%.")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings) as s, httpx.AsyncClient() as http:
        access = workspace_access(http, fake_lark.domain, {OWNER: "u-owner"})
        s.app.core.runtime.services["workspace"] = access
        assert (await s.post_event(comment_event("r1", event_id="ev_c1")))[0] == 200
        assert (await s.post_event(comment_event("r1", event_id="ev_c1")))[0] == 200  # again
        await fake_lark.wait_for(lambda: len(fake_lark.comment_replies) == 1)
        (reply,) = fake_lark.comment_replies
        assert reply["comment_id"] == "c1" and reply["text"] == "It is about 11.8%, not 12%."
        assert reply["token"].startswith("t-fake-")  # the bot writes its own reply
        # the bot's own reply comes back as an event: never answered
        assert (await s.post_event(comment_event(reply["reply_id"], sender="ou_bot")))[0] == 200
        assert (await s.post_event(comment_event("r9", mentioned=False)))[0] == 200
    (prompt,) = [r["messages"][-1]["content"] for r in fake_llm.requests]
    assert "is this number right?" in prompt and "Q3 revenue grew 12%" in prompt
    assert "Q3 revenue: 10.4M" in prompt  # the document, read as the commenter
    doc_reads = [r for r in fake_lark.requests if r.path.endswith("/raw_content")]
    assert [r.authorization for r in doc_reads] == ["Bearer u-owner"]
    assert len(fake_lark.comment_replies) == 1


async def test_without_an_authorization_only_the_comment_is_used(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    seed(fake_lark)
    fake_llm.reply_text("Send /auth so I can read the report. " + "x" * 2000)
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings) as s, httpx.AsyncClient() as http:
        s.app.core.runtime.services["workspace"] = workspace_access(http, fake_lark.domain, {})
        await s.post_event(comment_event("r1"))
        await fake_lark.wait_for(lambda: len(fake_lark.comment_replies) == 1)
    prompt = fake_llm.requests[0]["messages"][-1]["content"]
    assert "has not authorized you" in prompt and "Q3 revenue: 10.4M" not in prompt
    assert not [r for r in fake_lark.requests if r.path.endswith("/raw_content")]
    text = fake_lark.comment_replies[0]["text"]
    assert len(text) <= 1000 and text.endswith("ask me in a direct message for the whole answer)")


async def test_a_comment_claim_left_by_a_dead_replica_is_answered_once_after_a_sweep(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    seed(fake_lark)
    fake_llm.reply_text("It is about 11.8%, not 12%.")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    async with Served(settings) as s, httpx.AsyncClient() as http:
        s.app.core.runtime.services["workspace"] = workspace_access(http, fake_lark.domain, {})
        native = s.app.parts.native
        assert native is not None
        # claimed before the ack, then the replica died: its answer never ran
        ask = await native.comments.claim(comment_event("r1"), signed=True)
        assert ask is not None
        # the bot's own reply, claimed by a replica that died before marking it done
        own = json.dumps({"kind": "comment", "reply_id": "r_own"})
        assert await s.app.journal.claim("comment:r_own", own)
        await s.lapse(ask.key)
        await s.lapse("comment:r_own")
        assert await s.sweep() == 1
        await fake_lark.wait_for(lambda: len(fake_lark.comment_replies) == 1)
        assert await s.app.idle(30)
        assert await s.app.message_status(ask.key) == "done"
        assert await s.app.message_status("comment:r_own") == "done"  # nothing to answer
        assert await s.sweep() == 0
    (reply,) = fake_lark.comment_replies
    assert reply["comment_id"] == "c1" and reply["text"] == "It is about 11.8%, not 12%."
    assert len(fake_llm.requests) == 1


async def test_a_comment_past_the_time_limit_says_so_and_the_next_is_answered(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    seed(fake_lark)
    second = text_reply("r2", OWNER, "@larkbot and Q2?")
    seed_comment(fake_lark, DOC, "c2", "Q2: 9.3M", [second])
    held = asyncio.Event()  # the model's first answer never ends until the test is done
    fake_llm.add(Reply(text="too late", gate=held)).reply_text("Q2 was 9.3M.")
    settings = settings_for(
        home, fake_lark.domain, fake_llm.base_url, lark={"turn_timeout_seconds": 1.0}
    )
    try:
        async with Served(settings) as s, httpx.AsyncClient() as http:
            s.app.core.runtime.services["workspace"] = workspace_access(http, fake_lark.domain, {})
            await s.post_event(comment_event("r1"))
            await fake_lark.wait_for(lambda: len(fake_lark.comment_replies) == 1)
            (late,) = fake_lark.comment_replies
            assert late["comment_id"] == "c1"
            assert late["text"] == "Sorry, I could not answer that: it took too long."
            assert await s.app.idle(30)
            assert await s.app.message_status("comment:r1") == "done"  # never answered again
            assert len(fake_llm.requests) == 1  # the model was asked, and held past the limit
            # read per comment: the next one gets room a loaded machine may need
            s.app.settings.lark.turn_timeout_seconds = 60.0
            await s.post_event(comment_event("r2", comment_id="c2"))
            await fake_lark.wait_for(lambda: len(fake_lark.comment_replies) == 2)
            assert await s.app.idle(30)
            assert await s.app.message_status("comment:r2") == "done"
    finally:
        held.set()
    assert [(r["comment_id"], r["text"]) for r in fake_lark.comment_replies] == [
        ("c1", "Sorry, I could not answer that: it took too long."),
        ("c2", "Q2 was 9.3M."),
    ]
