"""A sender's own uploads, end to end: a non-owner's long document reaches the model inline,
the rest in a .txt they (and only they, in that turn) may have read with file_read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, FakeToolCall
from tests.lark_harness import Served, bot_mention, message_event, settings_for
from tests.test_lark_conversations import GROUP, pdf_with_text, send, text_of, user_messages


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_a_guest_reads_the_rest_of_their_own_document_and_nothing_else(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    words = " ".join(f"w{i}" for i in range(6000))  # ~35,000 characters: over the inline budget
    fake_lark.add_resource("om_long", "file_long", pdf_with_text(f"START {words} FINISH"))
    diary = tmp_path / "owner-diary.txt"
    diary.write_text("the owner's private plans")
    whole = home / "inbox" / "oc_team" / "om_long" / "report.pdf.txt"
    fake_llm.reply_tools(
        FakeToolCall("file_read", {"path": str(whole)}),
        FakeToolCall("file_read", {"path": str(diary)}),
    )
    fake_llm.reply_text("It ends with FINISH.").reply_text("ok")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        content = json.dumps({"file_key": "file_long", "file_name": "report.pdf"})
        upload = message_event(
            sender="ou_bob", message_id="om_long", message_type="file", content=content, **GROUP
        )
        upload["event"]["message"]["mentions"] = [bot_mention()]
        await send(s, fake_lark, upload, 1)
        later = message_event(
            "@_user_1 and now?", sender="ou_bob", mentions=[bot_mention()], **GROUP
        )
        await send(s, fake_lark, later, 2)
    [inline] = (text_of(c) for c in user_messages(fake_llm.requests[0]))
    assert inline.startswith("[user-bob] [user-bob sent a file: report.pdf (34.7 KB), saved at ")
    assert "START w0" in inline and "FINISH" not in inline and str(whole) in inline
    assert "FINISH" in whole.read_text()  # the whole text, for the rest
    assert "file_read" in tool_names(fake_llm.requests[0])  # shown: they sent a file
    mine, theirs = tool_messages(fake_llm.requests[1])
    assert "START w0" in mine and not mine.startswith("Error")
    assert "only the files this user sent" in theirs and "private plans" not in theirs
    second = fake_llm.requests[2]
    assert "file_read" not in tool_names(second)  # no upload in this turn: no file reading
    assert "START w0" not in "".join(tool_messages(second))  # earlier results hidden again


async def test_a_reply_to_ones_own_file_opens_it_a_reply_to_someone_elses_does_not(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.add_message(
        "om_file",
        chat_id="oc_team",
        msg_type="file",
        sender={"id": "ou_bob", "id_type": "open_id", "sender_type": "user"},
        body={"content": json.dumps({"file_key": "file_b", "file_name": "b.csv"})},
    )
    fake_lark.add_resource("om_file", "file_b", b"region,total\nnorth,12\n")
    saved = home / "inbox" / "oc_team" / "om_file" / "b.csv"
    for _ in ("ou_bob", "ou_carol"):
        fake_llm.reply_tools(FakeToolCall("file_read", {"path": str(saved)})).reply_text("ok")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        for n, sender in enumerate(("ou_bob", "ou_carol"), 1):
            event = message_event(
                "@_user_1 read it again",
                sender=sender,
                mentions=[bot_mention()],
                parent_id="om_file",
                **GROUP,
            )
            await send(s, fake_lark, event, n)
    assert "north,12" in text_of(user_messages(fake_llm.requests[0])[-1])  # inline for both
    [bobs] = tool_messages(fake_llm.requests[1])
    assert bobs.startswith("region,total")  # his own file, quoted: he may have it read
    carol_turn = fake_llm.requests[2]
    assert "file_read" not in tool_names(carol_turn)  # someone else's file opens nothing
    carols = tool_messages(fake_llm.requests[3])
    assert carols[-1].startswith("Error: refused: file_read reads the owner's private data")
    assert not any("region,total" in m for m in carols)  # Bob's earlier read hidden from her
