"""SessionStore: persistence across restarts, trimming that keeps tool rounds whole."""

from __future__ import annotations

from pathlib import Path

from larkbot.storage.db import Database
from larkbot.storage.sessions import SessionStore, message_chars, repair, session_title, trim


def call_round(i: int, size: int = 10) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": "r" * size},
    ]


async def test_history_survives_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    db = Database(url)
    store = SessionStore(db)
    await store.init()
    await store.append("a", [{"role": "user", "content": "你好"}, *call_round(1)])
    await store.append("b", [{"role": "user", "content": "other"}])
    await db.close()

    db2 = Database(url)
    store2 = SessionStore(db2)
    await store2.init()
    loaded = await store2.load("a")
    assert loaded[0] == {"role": "user", "content": "你好"} and len(loaded) == 3
    assert [i.session_id for i in await store2.list_sessions("a")] == ["a"]
    assert {i.session_id for i in await store2.list_sessions()} == {"a", "b"}
    await store2.clear("a")
    assert await store2.load("a") == []
    assert len(await store2.load("b")) == 1
    await db2.close()


def test_trim_drops_oldest_turns_and_never_splits_calls() -> None:
    msgs: list[dict] = []
    for turn in range(10):
        msgs.append({"role": "user", "content": f"question {turn}"})
        msgs += call_round(turn, size=300)
        msgs.append({"role": "assistant", "content": f"answer {turn}"})
    budget = 2000
    kept = trim(msgs, budget)
    assert sum(message_chars(m) for m in kept) <= budget
    assert kept[0]["role"] == "user" and kept[-1] == msgs[-1]
    assert repair(kept) == kept  # every call still has its result


def test_trim_inside_one_long_turn_keeps_user_message() -> None:
    msgs = [{"role": "user", "content": "do lots"}]
    for i in range(20):
        msgs += call_round(i, size=500)
    kept = trim(msgs, 3000)
    assert kept[0] == msgs[0]
    assert kept[-1] == msgs[-1]
    assert repair(kept) == kept and len(kept) < len(msgs)


def test_repair_drops_orphans() -> None:
    orphan_call = call_round(1)[:1]
    orphan_result = call_round(2)[1:]
    good = call_round(3)
    msgs = [{"role": "user", "content": "q"}, *orphan_call, *orphan_result, *good]
    assert repair(msgs) == [{"role": "user", "content": "q"}, *good]


def test_session_title_is_the_first_user_message_on_one_line_cut_to_fit() -> None:
    first = [{"role": "system", "content": "x"}, {"role": "user", "content": " a\n b " + "c" * 90}]
    assert session_title(first) == ("a b " + "c" * 90)[:80]  # the web's list: a plain cut
    assert session_title(first, 60, "…") == ("a b " + "c" * 90)[:59] + "…"  # the terminal's
    assert session_title([{"role": "user", "content": "short"}], 60, "…") == "short"
    assert session_title([]) == ""
