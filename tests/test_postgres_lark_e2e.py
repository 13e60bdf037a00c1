"""Two Lark replicas on one PostgreSQL: a redelivered event runs once; history and audit shared.

Signed events over real HTTP → App (storage.url on PostgreSQL) → FakeLLM → FakeLark replies.
Needs LARKBOT_TEST_PG_URL (the `pg_url` fixture; `make test` provides it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, message_event, settings_for


async def test_two_replicas_share_one_postgres(
    home: Path, tmp_path: Path, pg_url: str, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    note = tmp_path / "note.txt"
    note.write_text("the secret word is 松鼠")
    fake_llm.reply_tools(("file_read", {"path": str(note)})).reply_text("It says 松鼠.")
    fake_llm.reply_text("Noted on replica a.").reply_text("You asked about the note.")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, storage={"url": pg_url})
    async with Served(settings) as a, Served(settings) as b:
        first = message_event("read my note", message_id="om_pg_1")
        # Lark redelivers to whichever replica; both get the same event at once.
        statuses = await asyncio.gather(a.post_event(first), b.post_event(first))
        assert [st for st, _ in statuses] == [200, 200]
        await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1, timeout=30)
        assert await a.app.idle(30) and await b.app.idle(30)
        assert await b.app.message_status("om_pg_1") == "done"

        for n, replica in ((2, a), (3, b)):  # b's turn must see what a stored
            event = message_event(f"message {n} via {'ab'[n - 2]}", message_id=f"om_pg_{n}")
            assert (await replica.post_event(event))[0] == 200
            await fake_lark.wait_for(lambda n=n: len(fake_lark.sent) == n, timeout=30)
            assert await replica.app.idle(30)

        await a.app.audit.flush()
        await b.app.audit.flush()
        audit = await b.app.audit.recent()
    assert [m["reply_to"] for m in fake_lark.sent] == ["om_pg_1", "om_pg_2", "om_pg_3"]
    assert len(fake_llm.requests) == 4  # one turn of two model calls, then one each
    history = str(fake_llm.requests[3]["messages"])
    assert all(t in history for t in ("read my note", "松鼠", "message 2 via a", "replica a"))
    assert [(e.sender, e.tool, e.allowed) for e in audit] == [(OWNER, "file_read", True)]
