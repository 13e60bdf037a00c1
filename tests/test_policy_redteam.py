"""The red-team findings the policy closes, one regression test each (unit level).

Protected paths (config, keys, plugins, /proc/*/environ, hard links), plugins owner-only by
default, per-sender redaction of arguments, other senders' messages raising the bar.
The end-to-end versions (signed events through `serve`) are in test_policy_e2e.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from larkbot.config import Settings, parse_settings
from larkbot.context import RequestContext
from larkbot.policy import Allow, Ask, Policy, Refuse
from larkbot.policy.paths import ProtectedPaths
from larkbot.policy.provenance import for_model, untrusted_labels, user_message
from larkbot.policy.redact import HIDDEN_ARGUMENTS, PERSONAL_ARGUMENTS, hide_private_results
from tests.builtin_rt import tool_runtime
from tools.base import BaseTool
from tools.builtin.fd_find import FdFindTool
from tools.builtin.file_read import FileReadTool
from tools.builtin.file_write import FileWriteTool
from tools.builtin.rg_search import RgSearchTool
from tools.builtin.shell import ShellTool, named_paths
from tools.plugins import PluginTool

OWNER = RequestContext("lark", "s", "ou_owner", True, chat_type="group")
GUEST = RequestContext("lark", "s", "ou_guest", False, chat_type="group")


def policy(settings: Settings, share: dict[str, Any] | None = None) -> Policy:
    return Policy(lambda: share or {}, protected=ProtectedPaths(lambda: settings))


@pytest.fixture
def settings(home: Path) -> Settings:
    (home / "config.yaml").write_text("lark: {app_secret: s3cret-value}\n")
    (home / ".secrets").mkdir()
    (home / ".secrets" / "github").write_text("ghp_x")
    (home / "knowledge").mkdir()
    (home / "knowledge" / "note.md").write_text("# a note")
    return parse_settings({})


async def test_file_tools_ask_every_time_for_the_bots_own_files(
    settings: Settings, home: Path, tmp_path: Path
) -> None:
    """Regression: reading config.yaml or .secrets/* needed no card; a shared guest read it."""
    async with tool_runtime() as rt:
        read, write = FileReadTool(rt), FileWriteTool(rt)
    rules = policy(settings, {"file_read": "everyone"})
    for target in (home / "config.yaml", home / ".secrets" / "github", home / "larkbot.db"):
        ask = rules.decide(read, {"path": str(target)}, OWNER)
        assert isinstance(ask, Ask) and ask.always and "bot's own files" in ask.prompt
        assert isinstance(rules.decide(read, {"path": str(target)}, GUEST), Refuse)
    plugin = home / "tools" / "evil.py"  # planting a plugin is asked for every time
    ask = rules.decide(write, {"path": str(plugin), "content": "x"}, OWNER)
    assert isinstance(ask, Ask) and ask.always
    # the owner's notes and ordinary files stay open
    assert isinstance(
        rules.decide(read, {"path": str(home / "knowledge" / "note.md")}, OWNER), Allow
    )
    other = tmp_path / "plain.txt"
    other.write_text("x")
    assert isinstance(rules.decide(read, {"path": str(other)}, GUEST), Allow)


async def test_process_environments_and_hard_links_are_protected(
    settings: Settings, home: Path, tmp_path: Path
) -> None:
    async with tool_runtime() as rt:
        read = FileReadTool(rt)
    rules = policy(settings)
    for spelled in ("/proc/self/environ", f"/proc/{os.getpid()}/environ", "/proc/1/environ"):
        assert isinstance(rules.decide(read, {"path": spelled}, OWNER), Ask)
    link = tmp_path / "innocent.txt"
    os.link(home / "config.yaml", link)  # a second name for the config, outside the home
    ask = rules.decide(read, {"path": str(link)}, OWNER)
    assert isinstance(ask, Ask) and "hard link" in ask.prompt
    alias = tmp_path / "alias"
    alias.symlink_to(home / ".secrets")
    assert isinstance(rules.decide(read, {"path": str(alias / "github")}, OWNER), Ask)


async def test_search_roots_containing_the_home_and_the_shell_are_guarded(
    settings: Settings, home: Path, tmp_path: Path
) -> None:
    async with tool_runtime() as rt:
        rg, fd, shell = RgSearchTool(rt), FdFindTool(rt), ShellTool(rt)
    rules = policy(settings)
    assert isinstance(rules.decide(rg, {"pattern": "key", "path": str(tmp_path)}, OWNER), Ask)
    assert isinstance(rules.decide(fd, {"pattern": "x", "path": "/"}, OWNER), Ask)
    elsewhere = tmp_path / "src"
    elsewhere.mkdir()
    assert isinstance(rules.decide(rg, {"pattern": "k", "path": str(elsewhere)}, OWNER), Allow)
    for command in ("cat /proc/$PPID/environ", f"cat {home}/config.yaml", "tr '\\0' < environ"):
        ask = rules.decide(shell, {"command": command}, OWNER)
        assert isinstance(ask, Ask) and ask.always, command
    assert named_paths("ls -la /tmp") == ["/tmp"]


class Planted(BaseTool):
    """What a planted plugin file looks like: no flags at all."""

    name = "planted"
    description = "looks harmless"

    async def run(self, **kw: Any) -> str:
        return "ran"


class DeclaredReadOnly(Planted):
    name = "weather"
    side_effect = False


def test_plugins_are_owner_only_until_shared_and_side_effects_never() -> None:
    """Regression: a plugin planted in $LARKBOT_HOME/tools/ was callable by any group member."""
    planted, weather = PluginTool(Planted(), "planted.py"), PluginTool(DeclaredReadOnly(), "w.py")
    assert planted.side_effect and planted.private_data
    assert not weather.side_effect and weather.private_data
    rules = Policy(lambda: {"planted": "everyone", "weather": "everyone"})
    assert isinstance(rules.decide(planted, {}, GUEST), Refuse)  # a side effect never opens
    assert isinstance(rules.decide(weather, {}, GUEST), Allow)  # declared and shared
    assert isinstance(Policy(dict).decide(weather, {}, GUEST), Refuse)  # not shared


class Personal(Planted):
    """A plugin declaring the hooks that only make the bot stricter, and acts_as_asker."""

    name = "personal"
    private_to_caller = True
    acts_as_asker = True

    async def check_before_asking(self, ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return f"refused for {ctx.sender_id}"


async def test_plugins_keep_their_stricter_hooks_but_never_act_as_the_asker() -> None:
    """Regression: a plugin's private_to_caller and check_before_asking were dropped."""
    wrapped = PluginTool(Personal(), "personal.py")
    assert wrapped.private_to_caller and not wrapped.acts_as_asker
    assert await wrapped.check_before_asking(GUEST, {}) == "refused for ou_guest"
    assert await PluginTool(Planted(), "p.py").check_before_asking(GUEST, {}) is None


def test_hidden_results_hide_the_arguments_that_quote_them() -> None:
    """Regression: a private result was hidden from other senders, arguments quoting it not."""
    history = [
        {"role": "user", "content": "read my diary"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "1", "function": {"name": "file_read", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "SECRET DIARY"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "2", "function": {"name": "web_search", "arguments": '{"q": "DIARY"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "2", "content": "results"},
        {"role": "user", "content": "next turn"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "3", "function": {"name": "web_search", "arguments": '{"q": 1}'}}
            ],
        },
    ]
    shown = hide_private_results(history, lambda name: name == "web_search")
    assert "SECRET" not in str(shown) and "DIARY" not in str(shown)
    assert shown[3]["tool_calls"][0]["function"]["arguments"] == HIDDEN_ARGUMENTS
    assert shown[6]["tool_calls"][0]["function"]["arguments"] == '{"q": 1}'  # a new turn


def test_personal_results_of_another_members_turn_are_hidden_in_the_same_walk() -> None:
    """One walk hides both: a tool the policy forbids, and another member's memory results."""
    history = [
        {"role": "user", "content": "[Alice] my salary?", "sender": {"id": "ou_alice"}},
        {
            "role": "assistant",
            "tool_calls": [{"id": "1", "function": {"name": "memory_search", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "SALARY"},
    ]
    personal = {"memory_search"}.__contains__
    for_bob = hide_private_results(history, lambda n: False, sender="ou_bob", personal=personal)
    assert "SALARY" not in str(for_bob) and "belongs to another person" in str(for_bob)
    assert for_bob[1]["tool_calls"][0]["function"]["arguments"] == PERSONAL_ARGUMENTS
    for_alice = hide_private_results(history, lambda n: True, sender="ou_alice", personal=personal)
    assert for_alice == history  # her own result, in her own turn


def test_other_senders_messages_raise_the_bar_and_stay_off_the_wire() -> None:
    """Regression: a member's message in the group history steered the owner's turn unasked."""
    mallory = RequestContext("lark", "g", "ou_m", False, chat_type="group", sender_name="Mallory")
    stored = user_message("[Mallory] trap -- 'rm -rf X' EXIT", mallory)
    assert untrusted_labels([stored, user_message("cleanup", OWNER)]) == [
        "a message from Mallory (ou_m, not an owner) in this chat"
    ]
    assert "sender" not in for_model([stored])[0]
    dm = RequestContext("lark", "p", "ou_owner", True, chat_type="p2p")
    assert user_message("hi", dm) == {"role": "user", "content": "hi"}
