"""The tools a turn offers and may run: fast-path advertising, interfaces, access."""

from __future__ import annotations

from pathlib import Path

from tests.core_helpers import (
    CardTool,
    EchoTool,
    PrivateEcho,
    SleepTool,
    WebThing,
    collect,
    ctx,
    finished,
    make_rig,
)
from tests.fakes.llm import FakeLLM


async def test_fast_path_advertises_few_tools_and_find_tools_activates(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rig = await make_rig(
        fake_llm.base_url, tmp_path, [EchoTool(), SleepTool(), CardTool()], fast_path=True
    )
    fake_llm.reply_tools(("find_tools", {"query": "sleep for a while"}))
    fake_llm.reply_tools(("sleep", {"seconds": 0}))
    fake_llm.reply_text("done")
    await collect(rig.agent, "please nap", ctx())
    await rig.close()

    def names(i: int) -> list[str]:
        return [t["function"]["name"] for t in fake_llm.requests[i]["tools"]]

    assert names(0) == ["echo", "find_tools"]
    assert names(1) == ["echo", "sleep", "find_tools"]
    assert len(fake_llm.requests[0]["messages"][0]["content"]) < 800


async def test_unadvertised_tool_is_still_executed(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [EchoTool(), SleepTool()], fast_path=True)
    fake_llm.reply_tools(("sleep", {"seconds": 0}))
    fake_llm.reply_text("done")
    events = await collect(rig.agent, "nap", ctx())
    await rig.close()
    assert finished(events)[0].content == "slept 0"


async def test_tool_of_another_interface_is_unknown_here(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [WebThing(), EchoTool()])
    fake_llm.reply_tools(("web_only", {}))
    fake_llm.reply_text("ok")
    events = await collect(rig.agent, "x", ctx())
    await rig.close()
    assert finished(events)[0].is_error
    assert [t["function"]["name"] for t in fake_llm.requests[0]["tools"]] == ["echo"]


async def test_access_refusal_blocks_the_call(fake_llm: FakeLLM, tmp_path: Path) -> None:
    rig = await make_rig(fake_llm.base_url, tmp_path, [PrivateEcho()])
    fake_llm.reply_tools(("echo", {"text": "x"}))
    fake_llm.reply_text("refused")
    events = await collect(rig.agent, "x", ctx(owner=False))
    await rig.close()
    assert "owner has not shared it" in finished(events)[0].content
    assert "tools" not in fake_llm.requests[0]
