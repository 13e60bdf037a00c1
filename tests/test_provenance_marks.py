"""The provenance API other parts use: marks stored, read back, kept off the wire, summarised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from larkbot.context import RequestContext
from larkbot.history_budget import HistoryBudget, since_summary
from larkbot.policy.provenance import (
    Kind,
    Source,
    for_model,
    mark,
    sources_of,
    untrusted_labels,
    user_message,
)
from larkbot.providers.base import Completion, Message
from larkbot.storage.db import Database
from larkbot.storage.sessions import SessionStore
from tools.builtin._fetched import (
    FetchedFiles,
    file_source,
    network_command,
    shell_sources,
    written_paths,
)

PAGE = Source(Kind.WEB, "web_fetch https://x.example (output not written by the owner)")


def test_marks_round_trip_and_stay_off_the_wire() -> None:
    message = mark({"role": "tool", "tool_call_id": "1", "content": "page"}, PAGE)
    assert sources_of(message) == [PAGE]
    assert mark(message, PAGE) == message  # once each
    assert mark(message, Source(Kind.OWNER, "mine")) == message  # an owner's text is no mark
    assert for_model([message]) == [{"role": "tool", "tool_call_id": "1", "content": "page"}]
    odd = {"role": "user", "content": "x", "provenance": [{"kind": "alien", "label": "L"}, 3]}
    assert sources_of(odd) == [Source(Kind.TOOL, "L")]  # unknown kinds still count


def test_a_turns_input_sources_are_stored_with_the_user_message() -> None:
    doc = Source(Kind.DOCUMENT, "the document plan.docx sent in this chat")
    ctx = RequestContext("lark", "p", "ou_owner", True, chat_type="p2p").with_input_sources(doc)
    stored = user_message("see attached", ctx)
    assert untrusted_labels([stored]) == [doc.label]
    assert for_model([stored]) == [{"role": "user", "content": "see attached"}]


def test_network_commands_are_told_apart() -> None:
    for command in ("curl -s https://a.example", "ls && wget x", "git -C r pull", "echo $(ssh h)"):
        assert network_command(command), command
    for command in ("ls -la", "git status", "echo curling", "python3 x.py"):
        assert not network_command(command), command
    saved = written_paths("curl -o /tmp/a.sh https://a.example/x && git clone https://g/r.git d")
    assert [p.name for p in saved] == ["a.sh", "d"]


def test_shell_output_of_a_received_file_and_later_reads_of_fetched_files_are_marked(
    tmp_path: Path,
) -> None:
    fetched, inbox_file = FetchedFiles(), tmp_path / "inbox" / "oc_dm" / "om_1" / "x.txt"
    [source] = shell_sources(f"cat {inbox_file}", [str(inbox_file)], tmp_path, fetched)
    assert source.kind is Kind.FILE and "received in a chat" in source.label
    assert shell_sources("ls /etc", ["/etc"], tmp_path, fetched) == ()
    clone = f"git clone https://g.example/r.git {tmp_path}/r"
    [source] = shell_sources(clone, [f"{tmp_path}/r"], tmp_path, fetched)
    assert source.kind is Kind.TOOL and source.label.startswith("shell `git clone")
    later = file_source(tmp_path / "r" / "README.md", tmp_path, fetched)
    assert later is not None and "saved by a network command" in later.label


class Summariser:
    """A provider whose only job here is to condense (HistoryBudget asks it)."""

    async def complete(self, messages: list[Message], tools: Any = None) -> Completion:
        """The summary."""
        return Completion("SUMMARY: the page asked for a cleanup.")


async def test_a_summary_keeps_the_sources_of_what_it_condenses(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/s.db")
    store = SessionStore(db)
    await store.init()
    try:
        old: list[Message] = [
            {"role": "user", "content": "read it " + "word " * 400},
            mark({"role": "assistant", "content": "it says " + "word " * 400}, PAGE),
        ]
        recent: list[Message] = [
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": "ok"},
        ]
        await store.append("s", [*old, *recent])
        budget = HistoryBudget(Summariser(), store)  # type: ignore[arg-type]
        note, kept = await budget.fit("s", await store.load("s"), 300)
        assert note.startswith("SUMMARY") and kept == recent
        history = await store.load("s")
        assert since_summary(history)[0] == note
        assert untrusted_labels(history[len(old) :]) == [PAGE.label]  # the marker holds it
    finally:
        await db.close()
