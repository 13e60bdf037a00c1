"""The agent loop against FakeLLM: concurrency, errors, consent, guard, max_steps, history."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from larkbot.consent import NobodyToAsk
from larkbot.context import RequestContext
from larkbot.events import (
    ConsentRequested,
    ErrorEvent,
    FinalAnswer,
    TextDelta,
    ToolStarted,
    UiPayload,
)
from larkbot.policy import Policy
from tests.core_helpers import (
    CardTool,
    DangerTool,
    EchoTool,
    HangingTool,
    MeetTool,
    PrivateEcho,
    RaisingTool,
    ScriptedConsent,
    SleepTool,
    WriteTool,
    collect,
    ctx,
    final,
    finished,
    make_rig,
)
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply


async def test_two_tool_calls_run_concurrently(fake_llm: FakeLLM, tmp_path: Path) -> None:
    # each call returns only once both are running: one after the other, neither would
    rig = await make_rig(fake_llm.base_url, tmp_path, [MeetTool(together=2)])
    fake_llm.reply_tools(("meet", {}), ("meet", {}))
    fake_llm.reply_text("both done")
    events = await collect(rig.agent, "meet twice", ctx())
    await rig.close()
    assert [e.content for e in finished(events)] == ["met 2", "met 2"]
    assert final(events).text == "both done"
    tool_msgs = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["met 2", "met 2"]


async def test_failures_become_error_results_and_loop_answers(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [SleepTool(), RaisingTool(), HangingTool()])
    fake_llm.reply_tools(
        ("no_such_tool", {}),
        ("sleep", {"seconds": "soon"}),
        ("boom", {}),
        ("hang", {}),
    )
    fake_llm.reply_text("I could not do it")
    events = await collect(rig.agent, "try things", ctx())
    await rig.close()
    results = {e.name: e for e in finished(events)}
    assert all(e.is_error for e in results.values())
    assert "unknown tool 'no_such_tool'" in results["no_such_tool"].content
    assert "'seconds'" in results["sleep"].content
    assert "kaboom" in results["boom"].content
    assert "timed out" in results["hang"].content
    assert final(events).text == "I could not do it"
    tool_msgs = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 4 and all(m["content"].startswith("Error:") for m in tool_msgs)


async def test_broken_json_arguments_are_an_error_result(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool()])
    fake_llm.reply_tools(FakeToolCall("echo", '{"text": "unterminated'))
    fake_llm.reply_text("sorry")
    events = await collect(rig.agent, "x", ctx())
    await rig.close()
    (done,) = finished(events)
    assert done.is_error and "not valid JSON" in done.content
    assert final(events).text == "sorry"


async def test_tools_see_the_request_context(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool()])
    fake_llm.reply_tools(("echo", {"text": "hi"}))
    fake_llm.reply_text("ok")
    events = await collect(rig.agent, "echo", ctx("sess-9"))
    await rig.close()
    assert finished(events)[0].content == "hi (from u1 in sess-9)"


async def test_consent_directory_grant_covers_subdirs(fake_llm: FakeLLM, tmp_path: Path) -> None:
    consent = ScriptedConsent(answers=[True, True])
    rig = await make_rig(fake_llm.base_url, tmp_path, [WriteTool()], consent=consent)
    sub = tmp_path / "a" / "b"
    (sub / "c").mkdir(parents=True)
    (tmp_path / "a" / "other").mkdir()
    fake_llm.reply_tools(("write", {"path": str(sub / "f.txt"), "content": "1"}))
    fake_llm.reply_tools(("write", {"path": str(sub / "c" / "g.txt"), "content": "2"}))
    fake_llm.reply_tools(("write", {"path": str(tmp_path / "a" / "other" / "h"), "content": "3"}))
    fake_llm.reply_text("written")
    events = await collect(rig.agent, "write three files", ctx())
    await rig.close()
    assert [r.scope for r in consent.asked] == [str(sub), str(tmp_path / "a" / "other")]
    assert len([e for e in events if isinstance(e, ConsentRequested)]) == 2
    assert (sub / "c" / "g.txt").read_text() == "2"


async def test_consent_grant_of_one_sender_does_not_cover_another_in_a_shared_session(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Regression: in a group session one person's grant let another skip the consent question."""
    consent = ScriptedConsent(answers=[True, False])
    rig = await make_rig(fake_llm.base_url, tmp_path, [WriteTool()], consent=consent)
    owner = ctx("group")
    member = RequestContext("cli", "group", sender_id="u2", is_owner=True)  # a second owner
    fake_llm.reply_tools(("write", {"path": str(tmp_path / "a.txt"), "content": "1"}))
    fake_llm.reply_text("written")
    await collect(rig.agent, "write a", owner)
    fake_llm.reply_tools(("write", {"path": str(tmp_path / "b.txt"), "content": "2"}))
    fake_llm.reply_text("refused")
    events = await collect(rig.agent, "write b", member)
    await rig.close()
    assert [r.context.sender_id for r in consent.asked] == ["u1", "u2"]  # asked again
    assert finished(events)[0].is_error and not (tmp_path / "b.txt").exists()


def _broken_share() -> dict[str, Any]:
    """A policy input with a bug (owner.share cannot be read)."""
    raise KeyError("owner")


async def test_failing_access_check_becomes_an_error_result(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Regression: an exception in the access policy ended the whole turn instead of the call."""
    broken = Policy(_broken_share)
    rig = await make_rig(fake_llm.base_url, tmp_path, [PrivateEcho()], policy=broken)
    fake_llm.reply_tools(("echo", {"text": "hi"}))
    fake_llm.reply_text("could not echo")
    events = await collect(rig.agent, "echo", ctx(owner=False))
    await rig.close()
    (result,) = finished(events)
    assert result.is_error and "could not be checked" in result.content
    assert isinstance(events[-1], FinalAnswer) and events[-1].text == "could not echo"


async def test_consent_always_asks_every_time(fake_llm: FakeLLM, tmp_path: Path) -> None:
    consent = ScriptedConsent(answers=[True, True, False])
    rig = await make_rig(fake_llm.base_url, tmp_path, [DangerTool()], consent=consent)
    for _ in range(3):
        fake_llm.reply_tools(("danger", {}))
    fake_llm.reply_text("stopped")
    events = await collect(rig.agent, "be dangerous", ctx())
    await rig.close()
    assert len(consent.asked) == 3 and all(r.always for r in consent.asked)
    results = finished(events)
    assert [r.is_error for r in results] == [False, False, True]
    assert "not allowed" in results[2].content
    assert not rig.agent.policy.grants.is_granted("s1", "danger", "u1")


async def test_declined_call_does_not_run(fake_llm: FakeLLM, tmp_path: Path) -> None:
    consent = ScriptedConsent(answers=[False])
    rig = await make_rig(fake_llm.base_url, tmp_path, [WriteTool()], consent=consent)
    target = tmp_path / "nope.txt"
    fake_llm.reply_tools(("write", {"path": str(target), "content": "x"}))
    fake_llm.reply_text("ok, not written")
    events = await collect(rig.agent, "write", ctx())
    await rig.close()
    assert not target.exists()
    assert not [e for e in events if isinstance(e, ToolStarted)]
    assert finished(events)[0].is_error


async def test_lark_refuses_non_owner_even_exempt_paths(fake_llm: FakeLLM, tmp_path: Path) -> None:
    exempt = tmp_path / "tmpdir"
    exempt.mkdir()
    rig = await make_rig(
        fake_llm.base_url,
        tmp_path,
        [WriteTool(exempt=exempt)],
        consent=NobodyToAsk(),
        interface="lark",
    )
    target = exempt / "x.txt"
    fake_llm.reply_tools(("write", {"path": str(target), "content": "x"}))
    fake_llm.reply_text("I can't do that for you")
    events = await collect(rig.agent, "write", ctx(owner=False, interface="lark"))
    assert not target.exists()
    (done,) = finished(events)
    assert done.is_error and "only the bot's owner" in done.content
    # the owner's identical call goes through, and so does a consent-needing one
    outside = tmp_path / "owner.txt"
    fake_llm.reply_tools(
        ("write", {"path": str(target), "content": "x"}),
        ("write", {"path": str(outside), "content": "y"}),
    )
    fake_llm.reply_text("done")
    events = await collect(rig.agent, "write", ctx("s2", owner=True, interface="lark"))
    await rig.close()
    assert target.read_text() == "x" and outside.read_text() == "y"
    assert not any(e.is_error for e in finished(events))


async def test_lark_asks_owner_approval_for_always_calls(fake_llm: FakeLLM, tmp_path: Path) -> None:
    approval = ScriptedConsent(answers=[False])
    rig = await make_rig(
        fake_llm.base_url, tmp_path, [DangerTool()], consent=approval, interface="lark"
    )
    fake_llm.reply_tools(("danger", {}))
    fake_llm.reply_text("denied")
    events = await collect(rig.agent, "go", ctx(interface="lark"))
    await rig.close()
    assert len(approval.asked) == 1
    assert finished(events)[0].is_error


async def test_max_steps_is_reached_and_said(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool()], max_steps=3)
    fake_llm.responder = lambda body: Reply(
        text="working…", tool_calls=[FakeToolCall("echo", {"text": "again"}, id="c1")]
    )
    events = await collect(rig.agent, "loop forever", ctx())
    history = await rig.store.load("s1")
    await rig.close()
    assert len(fake_llm.requests) == 3
    answer = final(events)
    assert "3 steps" in answer.text and "agent.max_steps" in answer.text
    assert history[-1]["role"] == "assistant" and "agent.max_steps" in history[-1]["content"]


async def test_provider_failure_is_an_error_event_and_user_message_kept(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [])
    fake_llm.reply_error(401, "bad key")
    events = await collect(rig.agent, "hello there", ctx())
    history = await rig.store.load("s1")
    await rig.close()
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert "llm.api_key" in error.message
    assert history == [{"role": "user", "content": "hello there"}]


async def test_history_continues_across_turns(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool()])
    fake_llm.reply_tools(("echo", {"text": "a"}))
    fake_llm.reply_text("first")
    fake_llm.reply_text("second")
    await collect(rig.agent, "one", ctx())
    events = await collect(rig.agent, "two", ctx())
    await rig.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "second"
    roles = [m["role"] for m in fake_llm.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]


async def test_ui_payloads_are_events_and_in_final_answer(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [CardTool()])
    fake_llm.reply_tools(("card", {}))
    fake_llm.reply_text("here is a card")
    events = await collect(rig.agent, "card please", ctx())
    await rig.close()
    assert [e.ui for e in events if isinstance(e, UiPayload)] == [{"lark_card": {"header": "hi"}}]
    assert final(events).ui == [{"lark_card": {"header": "hi"}}]


async def test_run_returns_the_final_answer(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(
        fake_llm.base_url,
        tmp_path,
        [],
    )
    fake_llm.reply_text("Bonjour !")
    answer = await rig.agent.run("s1", "Salut", ctx())
    await rig.close()
    assert answer.text == "Bonjour !"


async def test_system_prompt_names_date_channel_and_language(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [])
    fake_llm.reply_text("好的")
    await collect(rig.agent, "你好，帮我看看", ctx())
    await rig.close()
    system = fake_llm.requests[0]["messages"][0]["content"]
    assert "Chinese" in system and "terminal" in system
    assert time.strftime("%Y") in system


async def test_failed_turn_keeps_finished_tool_rounds(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool()])
    fake_llm.reply_tools(("echo", {"text": "a"}))
    for _ in range(4):  # the first reply plus every retry fail
        fake_llm.reply_error(500, "down")
    events = await collect(rig.agent, "go", ctx())
    history = await rig.store.load("s1")
    await rig.close()
    assert isinstance(events[-1], ErrorEvent) and "HTTP 500" in events[-1].message
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]


async def test_non_streaming_mode(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool()])
    rig.agent.settings.llm.stream = False
    fake_llm.reply_tools(("echo", {"text": "a"}))
    fake_llm.reply_text("plain")
    events = await collect(rig.agent, "go", ctx())
    await rig.close()
    assert final(events).text == "plain"
    assert all(r["stream"] is False for r in fake_llm.requests)


async def test_turns_of_one_session_are_serialised(fake_llm: FakeLLM, tmp_path: Path) -> None:
    import asyncio

    rig = await make_rig(fake_llm.base_url, tmp_path, [SleepTool()])
    fake_llm.reply_tools(("sleep", {"seconds": 0.2}))
    fake_llm.reply_text("first")
    fake_llm.reply_text("second")
    await asyncio.gather(rig.agent.run("s1", "one", ctx()), rig.agent.run("s1", "two", ctx()))
    history = await rig.store.load("s1")
    await rig.close()
    roles = [m["role"] for m in history]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]


async def test_disabled_tools_are_hidden_and_refused_without_restart(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool(), SleepTool()])
    rig.agent.settings.tools.disabled = ["sleep"]  # what a hot reload of `tools:` does
    fake_llm.reply_tools(("sleep", {"seconds": 0}))
    fake_llm.reply_text("ok")
    events = await collect(rig.agent, "x", ctx())
    await rig.close()
    assert [t["function"]["name"] for t in fake_llm.requests[0]["tools"]] == ["echo"]
    assert finished(events)[0].is_error
