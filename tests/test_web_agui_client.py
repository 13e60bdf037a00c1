"""The official AG-UI client (@ag-ui/client's HttpAgent, from npm) against a real larkbot server.

tests/agui_client.mjs runs HttpAgent in node; it posts the protocol's RunAgentInput to /chat and
checks the stream as the client library does. Here: text and a tool call over two runs of one
thread, the web consent flow, and stopping a run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.npm_packages import node, npm_package
from tests.web_harness import AUTH, WEB_TOKEN, outside_tmp, web_settings

SCRIPT = Path(__file__).parent / "agui_client.mjs"


async def run_client(s: Served, *args: str) -> list[dict[str, Any]]:
    """The JSON lines agui_client.mjs printed (it fails the test when node exits non-zero)."""
    npm_package("@ag-ui/client")
    base = s.url("/").rstrip("/")
    proc = await asyncio.create_subprocess_exec(
        node(), str(SCRIPT), base, WEB_TOKEN, *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(60):
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert "[ag-ui]" not in err.decode()  # the client warns about any stream it had to mend
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def events_of(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events the client took, in order."""
    return [line["event"] for line in lines if "event" in line]


async def test_text_and_a_tool_call_over_two_runs_of_one_thread(
    home: Path, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("")
    fake_llm.reply_text("Hello from larkbot.")
    fake_llm.reply_tools(("file_list", {"path": str(work)})).reply_text("There is notes.md.")
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        lines = await run_client(s, "hi", "what is in work?")
        assert not [line for line in lines if "error" in line]
        runs = [line["run"] for line in lines if "run" in line]
        events = events_of(lines)
        thread = runs[0]["threadId"]
        assert {e["threadId"] for e in events if e["type"].startswith("RUN_")} == {thread}
        starts = [e["runId"] for e in events if e["type"] == "RUN_STARTED"]
        ends = [e["runId"] for e in events if e["type"] == "RUN_FINISHED"]
        assert starts == ends and [r.split("-")[1] for r in starts] == ["0", "1"]  # echoed
        messages = runs[1]["messages"]
        roles = [m["role"] for m in messages]
        assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant"]
        assert messages[1]["content"] == "Hello from larkbot."
        assert messages[5]["content"] == "There is notes.md."
        (call,) = messages[3]["toolCalls"]
        assert call["function"]["name"] == "file_list"
        assert json.loads(call["function"]["arguments"]) == {"path": str(work)}
        assert "notes.md" in messages[4]["content"]
        assert s.http is not None
        async with s.http.get(s.url(f"/api/sessions/{thread}"), headers=AUTH) as r:
            stored = (await r.json())["messages"]
        assert stored[0] == {"role": "user", "content": "hi"}
        assert stored[-1]["content"] == "There is notes.md."
    second = fake_llm.requests[1]
    assert "hi" in json.dumps(second["messages"])  # the server's history carried the thread
    assert "client_side" not in json.dumps(second.get("tools", []))  # client tools ignored


async def test_consent_is_answered_through_the_web_consent_api(
    home: Path, fake_llm: FakeLLM
) -> None:
    with outside_tmp() as work:
        target = work / "note.txt"
        fake_llm.reply_tools(("file_write", {"path": str(target), "content": "hi"}))
        fake_llm.reply_text("Written.")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            lines = await run_client(s, "--consent", "allow_once", "write a note")
        events = events_of(lines)
        asked = [e["value"] for e in events if e.get("name") == "consent_request"]
        assert [a["tool"] for a in asked] == ["file_write"]
        assert target.read_text() == "hi"
        assert events[-1]["type"] == "RUN_FINISHED" and "outcome" not in events[-1]
        assert not [line for line in lines if "error" in line]


async def test_a_stopped_run_finishes_with_the_cancelled_outcome(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("too late", delay=30.0)
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        lines = await run_client(s, "--stop", "take your time")
        events = events_of(lines)
        assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
        assert events[-1]["outcome"] == {"type": "cancelled"}
        assert not [line for line in lines if "error" in line]
