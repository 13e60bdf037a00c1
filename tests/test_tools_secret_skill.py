"""get_secret (owner, consent every time, confinement, never logged) and skill_read."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog

from larkbot.context import RequestContext
from larkbot.events import ConsentRequested, FinalAnswer
from larkbot.logs import configure_logging
from tests.builtin_rt import tool_runtime
from tests.core_helpers import ScriptedConsent, call_tool, collect, ctx, make_rig
from tests.fakes.llm import FakeLLM
from tools.builtin.get_secret import GetSecretTool
from tools.builtin.skill_read import SkillReadTool
from tools.runtime import ToolRuntime

VALUE = "ghp_Zq9-very-secret-value"


@pytest.fixture
async def rt(home: Path) -> AsyncIterator[ToolRuntime]:
    secrets = home / ".secrets"
    secrets.mkdir()
    (secrets / "github").write_text(VALUE + "\n")
    (home / "config.yaml").write_text("llm: {api_key: sk-in-config}\n")
    async with tool_runtime() as runtime:
        yield runtime


async def test_owner_reads_a_secret(rt: ToolRuntime) -> None:
    result = await call_tool(GetSecretTool(rt), name="github")
    assert result.content == VALUE and not result.is_error


def test_flags_and_consent_hooks(home: Path) -> None:
    tool = GetSecretTool
    assert tool.private_data and not tool.side_effect and tool.no_compress
    assert not tool.fast_path


async def test_consent_every_read_scoped_to_the_tool(rt: ToolRuntime) -> None:
    tool = GetSecretTool(rt)
    assert tool.consent_check(name="github") == "read secret 'github'"
    assert tool.consent_always(name="github")
    assert tool.consent_scope(name="github") == "get_secret"


@pytest.mark.parametrize("name", ["../config.yaml", "/etc/passwd", "a/b", "..", ".hidden", ""])
async def test_names_are_confined(rt: ToolRuntime, name: str) -> None:
    result = await call_tool(GetSecretTool(rt), name=name)
    assert result.is_error and "sk-in-config" not in result.content


async def test_symlink_out_of_the_secrets_dir_is_refused(rt: ToolRuntime, home: Path) -> None:
    (home / ".secrets" / "sneaky").symlink_to(home / "config.yaml")
    result = await call_tool(GetSecretTool(rt), name="sneaky")
    assert result.is_error and "outside" in result.content


async def test_unknown_secret_lists_names_not_values(rt: ToolRuntime) -> None:
    result = await call_tool(GetSecretTool(rt), name="nope")
    assert result.is_error and "github" in result.content and VALUE not in result.content


async def test_non_owner_is_refused(rt: ToolRuntime) -> None:
    guest = RequestContext("lark", "s1", sender_id="ou_x", is_owner=False)
    result = await call_tool(GetSecretTool(rt), guest, name="github")
    assert result.is_error and VALUE not in result.content


async def test_agent_turn_asks_each_time_and_never_logs_the_value(
    rt: ToolRuntime,
    fake_llm: FakeLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Through the real loop at debug level: consent asked on both reads, the model gets the
    value, and nothing written to the logs contains it."""
    saved = structlog.get_config()
    configure_logging("debug", "json")
    caplog.set_level(logging.DEBUG)
    consent = ScriptedConsent()
    rig = await make_rig(fake_llm.base_url, tmp_path, [GetSecretTool(rt)], consent=consent)
    try:
        fake_llm.reply_tools(("get_secret", {"name": "github"}))
        fake_llm.reply_tools(("get_secret", {"name": "github"}))
        fake_llm.reply_text("done")
        events = await collect(rig.agent, "use my github token", ctx())
    finally:
        await rig.close()
        structlog.configure(**saved)
    asked = [e for e in events if isinstance(e, ConsentRequested)]
    assert len(consent.asked) == 2 and all(r.always for r in consent.asked), asked
    assert any(isinstance(e, FinalAnswer) and e.text == "done" for e in events)
    tool_msgs = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == VALUE
    logged = capsys.readouterr().err + caplog.text
    assert "secret_read" in logged  # the read itself is logged, by name
    assert VALUE not in logged


async def test_skill_list_and_read() -> None:
    tool = SkillReadTool()
    listing = await tool.run()
    assert "- ui-card: " in listing.content
    doc = await tool.run(name="ui-card")
    assert doc.content.startswith("# ui-card") and not doc.is_error
    for bad in ("nope", "../config", "ui-card.md"):
        missing = await tool.run(name=bad)
        assert missing.is_error and "ui-card" in missing.content
