"""FeedbackStore on SQLite: every session's 👍/👎 counted in one query (the schedule list)."""

from __future__ import annotations

from pathlib import Path

from larkbot.storage.db import Database
from larkbot.storage.feedback import Feedback, FeedbackStore


async def test_counts_many_counts_each_session_and_zeroes_the_rest(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/f.db")
    store = FeedbackStore(db)
    await store.init()
    for answer, who, kind, session in [
        ("om_1", "ou_ann", "up", "schedule:a"),
        ("om_1", "ou_bob", "up", "schedule:a"),
        ("om_2", "ou_ann", "down", "schedule:a"),
        ("om_3", "ou_ann", "down", "schedule:b"),
        ("om_4", "ou_ann", "up", "lark:oc_1"),  # a session not asked for
    ]:
        assert await store.record(Feedback(answer, who, kind, session, "om_q", "oc_1", 1.0))
    assert await store.counts_many(["schedule:a", "schedule:b", "schedule:none"]) == {
        "schedule:a": {"up": 2, "down": 1},
        "schedule:b": {"up": 0, "down": 1},
        "schedule:none": {"up": 0, "down": 0},
    }
    assert await store.counts_many([]) == {}
    assert await store.counts("schedule:a") == {"up": 2, "down": 1}  # the single-session view
    await db.close()
