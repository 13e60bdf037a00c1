"""/chat over real HTTP: client ids kept to the web, refused calls' arguments, token usage."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.llm import FakeLLM, FakeToolCall
from tests.lark_harness import Served
from tests.web_harness import AUTH, chat_turn, sse_events, web_settings


async def test_any_client_session_id_is_a_web_session_of_its_own(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("first").reply_text("second")
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        one = await chat_turn(s.http, s.url(""), "hi", session_id="lark:oc_1")
        assert one[0]["threadId"] == one[-1]["threadId"] == "lark:oc_1"  # echoed as sent
        two = await chat_turn(s.http, s.url(""), "again", session_id="web:lark:oc_1")
        assert two[-1]["type"] == "RUN_FINISHED"
        async with s.http.get(s.url("/api/sessions"), headers=AUTH) as r:
            listed = [x["id"] for x in (await r.json())["sessions"]]
        assert listed == ["web:lark:oc_1"]  # kept as a web session, never the Lark chat's
        async with s.http.get(s.url("/api/sessions/lark:oc_1"), headers=AUTH) as r:
            history = (await r.json())["messages"]
        assert [m["content"] for m in history] == ["hi", "first", "again", "second"]


async def test_a_refused_call_streams_the_arguments_it_was_sent(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_tools(
        ("no_such_tool", {"q": "日本", "n": 2}), FakeToolCall("file_list", "{not json")
    )
    fake_llm.reply_text("ok")
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        events = await chat_turn(s.http, s.url(""), "try things")
    args = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    assert args == ['{"q": "日本", "n": 2}', "{}"]  # broken JSON: no arguments to show
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert [r["metadata"]["isError"] for r in results] == [True, True]


async def test_run_finished_carries_the_turns_token_usage(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_tools(("no_such_tool", {})).reply_text(
        "done", usage={"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}
    )
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        async with s.http.post(s.url("/chat"), json={"message": "hi"}, headers=AUTH) as r:
            events = [e async for _, e in sse_events(r)]
    (usage,) = events[-1]["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]) == (40, 12, 52)
    assert usage["model"]


async def test_run_agent_input_takes_its_last_user_message_and_run_id(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("answer")
    body = {
        "threadId": "thread-1",
        "runId": "run-a",
        "state": {"x": 1},
        "messages": [
            {"id": "1", "role": "user", "content": "old question"},
            {"id": "2", "role": "assistant", "content": "old answer"},
            {"id": "3", "role": "user", "content": [{"type": "text", "text": "new question"}]},
        ],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        async with s.http.post(s.url("/chat"), json=body, headers=AUTH) as r:
            events = [e async for _, e in sse_events(r)]
        assert [(e["threadId"], e["runId"]) for e in (events[0], events[-1])] == [
            ("thread-1", "run-a")
        ] * 2
        async with s.http.post(s.url("/chat"), json=body, headers=AUTH) as r:
            assert r.status == 409  # a run id names one run
        async with s.http.get(s.url("/api/sessions/thread-1"), headers=AUTH) as r:
            stored = (await r.json())["messages"]
    assert [m["content"] for m in stored] == ["new question", "answer"]  # the server's history
