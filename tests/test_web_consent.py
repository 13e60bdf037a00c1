"""WebConsentProvider over real HTTP: the card goes into the stream, the POST answers it."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import (
    AUTH,
    chat_turn,
    consents,
    outside_tmp,
    sse_events,
    web_settings,
)


def _results(events: list[dict]) -> list[str]:
    return [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]


async def test_deny_leaves_the_file_unwritten(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        target = work / "note.txt"
        fake_llm.reply_tools(("file_write", {"path": str(target), "content": "hi"}))
        fake_llm.reply_text("I was not allowed to.")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            assert s.http is not None
            events = await chat_turn(s.http, s.url(""), "write a note", answer="deny")
        asked = consents(events)
        assert len(asked) == 1 and asked[0]["tool"] == "file_write"
        assert asked[0]["scope"] == str(work) and asked[0]["always"] is False
        assert asked[0]["expires_at"].endswith("Z") and asked[0]["request_id"].startswith("cr_")
        assert not target.exists()
        assert "not allowed" in _results(events)[0] and "declined" in _results(events)[0]
        assert events[-1]["type"] == "RUN_FINISHED"


async def test_allow_session_covers_a_second_write_in_the_same_directory(
    home: Path, fake_llm: FakeLLM
) -> None:
    with outside_tmp() as work:
        (work / "sub").mkdir()
        first, second, other = work / "a.txt", work / "sub" / "b.txt", work.parent / "x.txt"
        fake_llm.reply_tools(("file_write", {"path": str(first), "content": "1"}))
        fake_llm.reply_text("wrote a")
        fake_llm.reply_tools(("file_write", {"path": str(second), "content": "2"}))
        fake_llm.reply_text("wrote b")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            assert s.http is not None
            one = await chat_turn(s.http, s.url(""), "write a", answer="allow_session")
            session = one[0]["threadId"]
            two = await chat_turn(s.http, s.url(""), "write b", session_id=session)
        assert len(consents(one)) == 1 and consents(two) == []  # the subtree is granted
        assert first.read_text() == "1" and second.read_text() == "2"
        assert not other.exists()


async def test_allow_once_is_not_remembered(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        for name in ("a", "b"):
            fake_llm.reply_tools(("file_write", {"path": str(work / name), "content": name}))
            fake_llm.reply_text(f"wrote {name}")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            assert s.http is not None
            one = await chat_turn(s.http, s.url(""), "write a", answer="allow_once")
            session = one[0]["threadId"]
            two = await chat_turn(
                s.http, s.url(""), "write b", session_id=session, answer="allow_once"
            )
        assert len(consents(one)) == 1 and len(consents(two)) == 1
        assert (work / "a").read_text() == "a" and (work / "b").read_text() == "b"


async def test_consent_always_asks_every_time(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        victim = work / "victim"
        command = f"rm -rf {victim}"
        for _ in range(2):
            fake_llm.reply_tools(("shell", {"command": command}))
            fake_llm.reply_text("removed")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            assert s.http is not None
            victim.mkdir()
            one = await chat_turn(s.http, s.url(""), "clean up", answer="allow_session")
            assert not victim.exists()
            victim.mkdir()
            session = one[0]["threadId"]
            two = await chat_turn(
                s.http, s.url(""), "again", session_id=session, answer="allow_session"
            )
        assert [c["always"] for c in consents(one) + consents(two)] == [True, True]
        assert not victim.exists()


async def test_consent_endpoint_404_409_and_expiry(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        target = work / "late.txt"
        fake_llm.reply_tools(("file_write", {"path": str(target), "content": "x"}))
        fake_llm.reply_text("no answer came")
        settings = web_settings(home, fake_llm.base_url, web={"consent_timeout_seconds": 0.5})
        async with Served(settings) as s:
            assert s.http is not None
            base = s.url("")
            async with s.http.post(
                f"{base}/api/consent/cr_nope", json={"decision": "deny"}, headers=AUTH
            ) as r:
                assert r.status == 404
            async with s.http.post(
                f"{base}/chat", json={"message": "write late"}, headers=AUTH
            ) as resp:
                events = [e async for _, e in sse_events(resp)]  # nobody answers: it expires
            rid = consents(events)[0]["request_id"]
            for decision, status in (("allow_once", 409), ("maybe", 400)):
                async with s.http.post(
                    f"{base}/api/consent/{rid}", json={"decision": decision}, headers=AUTH
                ) as r:
                    assert r.status == status
        assert not target.exists()
        resolved = [e["value"] for e in events if e.get("name") == "consent_resolved"]
        assert resolved == [{"request_id": rid, "decision": "expired"}]
        assert "did not answer in time" in _results(events)[0]


async def test_a_second_answer_gets_409(home: Path, fake_llm: FakeLLM) -> None:
    with outside_tmp() as work:
        fake_llm.reply_tools(("file_write", {"path": str(work / "f"), "content": "x"}))
        fake_llm.reply_text("done")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            assert s.http is not None
            base = s.url("")
            statuses = []
            async with s.http.post(f"{base}/chat", json={"message": "w"}, headers=AUTH) as resp:
                async for _, event in sse_events(resp):
                    if event.get("name") == "consent_request":
                        url = f"{base}/api/consent/{event['value']['request_id']}"
                        for decision in ("allow_once", "deny"):
                            async with s.http.post(
                                url, json={"decision": decision}, headers=AUTH
                            ) as r:
                                statuses.append(r.status)
        assert statuses == [200, 409]
        assert (work / "f").read_text() == "x"  # the first answer won
