"""The sender's own uploads: a non-owner may read the files they sent in this turn, only those."""

from __future__ import annotations

from pathlib import Path

from larkbot.config import LiveSettings, parse_settings
from larkbot.context import RequestContext
from larkbot.policy import Allow, Policy, Refuse, decide
from tools.builtin.file_read import FileReadTool
from tools.builtin.shell import ShellTool
from tools.runtime import ToolRuntime


def make_rt() -> ToolRuntime:
    """Enough runtime for the tools' consent hooks (no HTTP, no database)."""
    return ToolRuntime("lark", LiveSettings(parse_settings({})), None, None)  # type: ignore[arg-type]


def guest(*uploads: Path) -> RequestContext:
    ctx = RequestContext("lark", "lark:oc_team", "ou_bob", False, chat_type="group")
    return ctx.with_uploads(*(str(p.resolve()) for p in uploads))


def test_a_guest_reads_their_upload_and_nothing_else(home: Path, tmp_path: Path) -> None:
    upload = tmp_path / "inbox" / "oc_team" / "om_1" / "notes.txt"
    upload.parent.mkdir(parents=True)
    upload.write_text("hello")
    other = tmp_path / "config.yaml"
    other.write_text("app_secret: x")
    (upload.parent / "link.txt").symlink_to(other)
    tool = FileReadTool(make_rt())
    ctx = guest(upload)
    assert isinstance(decide(tool, {"path": str(upload)}, ctx, {}), Allow)
    dotted = f"{upload.parent}/../om_1/notes.txt"  # the same file, spelled differently
    assert isinstance(decide(tool, {"path": dotted}, ctx, {}), Allow)
    for path in (str(other), str(upload.parent / "link.txt"), str(upload.parent), "", 7):
        verdict = decide(tool, {"path": path}, ctx, {})
        assert isinstance(verdict, Refuse), path
        assert "only the files this user sent" in verdict.reason and "notes.txt" in verdict.reason
    assert isinstance(decide(tool, {}, ctx, {}), Refuse)


def test_without_uploads_or_for_side_effects_nothing_opens(home: Path, tmp_path: Path) -> None:
    upload = tmp_path / "notes.txt"
    upload.write_text("hello")
    rt = make_rt()
    plain = guest()
    assert isinstance(decide(FileReadTool(rt), {"path": str(upload)}, plain, {}), Refuse)
    shell = ShellTool(rt)  # a side effect stays the owner's, whatever the sender uploaded
    verdict = decide(shell, {"command": f"cat {upload}"}, guest(upload), {})
    assert isinstance(verdict, Refuse)


def test_uploads_open_no_past_results_in_a_shared_history(home: Path, tmp_path: Path) -> None:
    policy = Policy(lambda: {})
    tool = FileReadTool(make_rt())
    ctx = guest(tmp_path / "notes.txt")
    assert isinstance(policy.access(tool, ctx), Allow)  # shown to the model this turn
    assert not policy.may_see_results(tool, ctx)  # the owner's earlier reads stay hidden
    owner = RequestContext("lark", "lark:oc_team", "ou_owner", True)
    assert policy.may_see_results(tool, owner)
