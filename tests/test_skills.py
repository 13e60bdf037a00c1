"""Skills: dropped-in SKILL.md folders are listed (CLI, prompt) and read (tool), broken ones
skipped with a log line, resources confined to the skill's folder, `skills add` / `remove`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from larkbot.config import parse_settings
from larkbot.context import RequestContext
from larkbot.prompt import build_system_prompt
from larkbot.skill_store import SkillStore, relevant
from tests.builtin_rt import tool_runtime
from tests.core_helpers import call_tool
from tests.test_core_cli import larkbot
from tools.builtin import skill_read
from tools.runtime import ToolRuntime

GUEST = RequestContext("lark", "s1", sender_id="ou_guest", is_owner=False)
REPORT = """---
name: weekly-report
description: How to write the team's weekly report from the sprint board.
license: MIT
---

# Weekly report

Start with the three biggest wins. The template is in template.md.
"""


def write_skill(root: Path, folder: str, text: str, **files: str) -> Path:
    """A skill folder `root/folder` with SKILL.md `text` and extra files."""
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(text, encoding="utf-8")
    for name, content in files.items():
        (path / name).write_text(content, encoding="utf-8")
    return path


@pytest.fixture
async def rt(home: Path) -> AsyncIterator[ToolRuntime]:
    async with tool_runtime() as runtime:
        yield runtime


def tool(rt: ToolRuntime) -> skill_read.SkillReadTool:
    """skill_read as the registry builds it (over this home's skills)."""
    (built,) = skill_read.provide(rt)
    assert isinstance(built, skill_read.SkillReadTool)
    return built


async def test_dropped_in_skill_is_listed_prompted_and_read(home: Path, rt: ToolRuntime) -> None:
    write_skill(home / "skills", "weekly-report", REPORT, **{"template.md": "## Wins\n- …\n"})
    code, out, _ = await larkbot(home, "skills", "list")
    assert code == 0
    assert "weekly-report" in out and "sprint board" in out and str(home / "skills") in out
    assert "ui-card" in out and "built-in" in out

    prompt = build_system_prompt(rt.settings, GUEST, "please write the weekly report")
    assert "- weekly-report: How to write the team's weekly report" in prompt
    assert "read first: 'weekly-report'" in prompt
    assert "Start with the three biggest wins" not in prompt  # bodies are read on demand

    listing = await call_tool(tool(rt), GUEST)
    assert "- weekly-report: " in listing.content and "- ui-card: " in listing.content
    body = await call_tool(tool(rt), GUEST, name="weekly-report")
    assert not body.is_error and body.content.startswith("# Weekly report")
    assert "license" not in body.content and "template.md" in body.content
    template = await call_tool(tool(rt), GUEST, name="weekly-report", file="template.md")
    assert template.content == "## Wins\n- …\n" and not template.is_error


async def test_builtin_ui_card_reads_as_before(rt: ToolRuntime) -> None:
    doc = await call_tool(tool(rt), name="ui-card")
    assert doc.content.startswith("# ui-card") and "## compare" in doc.content
    for name in ("browser", "lark-workspace", "schedules"):
        assert not (await call_tool(tool(rt), name=name)).is_error


async def test_malformed_skills_are_skipped_with_a_log_line(home: Path, rt: ToolRuntime) -> None:
    shelf = home / "skills"
    write_skill(shelf, "no-front", "# Just markdown\n")
    write_skill(shelf, "no-name", "---\ndescription: nameless\n---\nbody\n")
    write_skill(shelf, "bad-yaml", "---\nname: [unclosed\n---\nbody\n")
    write_skill(shelf, "no-desc", "---\nname: no-desc\n---\nbody\n")
    write_skill(shelf, "huge", f"---\nname: huge\ndescription: big\n---\n{'x' * 70_000}\n")
    write_skill(shelf, "ui-card-2", "---\nname: ui-card\ndescription: an impostor\n---\nbody\n")
    (shelf / "empty").mkdir()
    write_skill(shelf, "good", "---\nname: good\ndescription: fine\n---\nbody\n")
    code, out, err = await larkbot(home, "skills", "list")
    assert code == 0 and "good" in out and "fine" in out
    for broken in ("no-front", "nameless", "bad-yaml", "no-desc", "huge", "impostor"):
        assert broken not in out
    assert err.count("skill_skipped") == 7, err
    for reason in ("front matter", "name", "not valid YAML", "description", "64 KB", "taken"):
        assert reason in err
    impostor = await call_tool(tool(rt), name="ui-card")
    assert impostor.content.startswith("# ui-card")


@pytest.mark.parametrize(
    "file", ["../other/SKILL.md", "../../config.yaml", "/etc/passwd", "..", "sub/../../x"]
)
async def test_resources_are_confined_to_the_skills_folder(
    home: Path, rt: ToolRuntime, file: str
) -> None:
    (home / "config.yaml").write_text("llm: {api_key: sk-in-config}\n")
    write_skill(home / "skills", "other", "---\nname: other\ndescription: other\n---\nsecret\n")
    write_skill(home / "skills", "weekly-report", REPORT)
    result = await call_tool(tool(rt), GUEST, name="weekly-report", file=file)
    assert result.is_error and "sk-in-config" not in result.content
    assert "secret" not in result.content and "root:" not in result.content


async def test_symlinks_out_of_the_folder_are_refused(
    home: Path, tmp_path: Path, rt: ToolRuntime
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("private notes")
    folder = write_skill(home / "skills", "weekly-report", REPORT, **{"inside.md": "ok"})
    (folder / "escape.md").symlink_to(outside)
    (folder / "alias.md").symlink_to(folder / "inside.md")
    escaped = await call_tool(tool(rt), GUEST, name="weekly-report", file="escape.md")
    assert escaped.is_error and "outside" in escaped.content
    assert "private notes" not in escaped.content
    alias = await call_tool(tool(rt), GUEST, name="weekly-report", file="alias.md")
    assert alias.content == "ok"
    linked = write_skill(tmp_path, "linked", "")
    (linked / "SKILL.md").unlink()
    (linked / "SKILL.md").symlink_to(outside)
    (home / "skills" / "linked").symlink_to(linked)
    assert (await call_tool(tool(rt), name="linked")).is_error


async def test_a_large_resource_is_refused(home: Path, rt: ToolRuntime) -> None:
    write_skill(home / "skills", "weekly-report", REPORT, **{"big.md": "y" * 70_000})
    result = await call_tool(tool(rt), name="weekly-report", file="big.md")
    assert result.is_error and "64 KB" in result.content


async def test_add_copies_a_checked_folder_and_remove_deletes_it(
    home: Path, tmp_path: Path
) -> None:
    source = write_skill(tmp_path / "src", "report", REPORT, **{"template.md": "t"})
    (source / "scripts").mkdir()
    (source / "scripts" / "fill.py").write_text("print('hi')\n")
    code, out, err = await larkbot(home, "skills", "add", str(source))
    assert code == 0, err
    installed = home / "skills" / "weekly-report"  # named by its front matter
    assert (installed / "template.md").read_text() == "t"
    assert (installed / "scripts" / "fill.py").is_file()
    assert (home / "skills").stat().st_mode & 0o077 == 0  # the shelf is owner-only
    assert "weekly-report" in (await larkbot(home, "skills", "list"))[1]

    again = await larkbot(home, "skills", "add", str(source))
    assert again[0] == 1 and "remove weekly-report" in again[2]
    code, out, err = await larkbot(home, "skills", "remove", "weekly-report")
    assert code == 0 and "Removed" in out and not installed.exists()
    assert "weekly-report" not in (await larkbot(home, "skills", "list"))[1]


async def test_add_refuses_what_does_not_pass(home: Path, tmp_path: Path) -> None:
    bad = write_skill(tmp_path, "bad", "---\ndescription: no name\n---\n")
    linked = write_skill(tmp_path, "linked", REPORT)
    (linked / "passwd.md").symlink_to("/etc/passwd")
    builtin = write_skill(tmp_path, "card", "---\nname: ui-card\ndescription: mine\n---\n")
    for source, why in [
        (bad, "name"),
        (linked, "symbolic links"),
        (builtin, "built-in"),
        (tmp_path / "missing", "not a folder"),
    ]:
        code, _, err = await larkbot(home, "skills", "add", str(source))
        assert code == 1 and why in err, err
    assert not (home / "skills").exists() or not any((home / "skills").iterdir())


async def test_builtins_cannot_be_removed_broken_ones_can(home: Path) -> None:
    code, _, err = await larkbot(home, "skills", "remove", "ui-card")
    assert code == 1 and "built in" in err
    write_skill(home / "skills", "broken", "no front matter\n")
    code, out, _ = await larkbot(home, "skills", "remove", "broken")
    assert code == 0 and "Removed" in out and not (home / "skills" / "broken").exists()
    code, _, err = await larkbot(home, "skills", "remove", "nope")
    assert code == 1 and "no skill" in err
    code, _, err = await larkbot(home, "skills", "remove")
    assert code == 2 and "NAME" in err


def test_prompt_caps_the_list_and_respects_disabled(home: Path) -> None:
    for n in range(40):
        write_skill(home / "skills", f"s{n:02}", f"---\nname: s{n:02}\ndescription: d{n}\n---\n")
    settings = parse_settings({})
    prompt = build_system_prompt(settings, GUEST, "hello")
    assert "- s25: d25" in prompt and "- s26: d26" not in prompt  # 4 built-ins + 26
    assert "… and 14 more" in prompt
    fast = build_system_prompt(settings, GUEST, "hello", fast=True)
    assert "find_tools('skill_read')" in fast and "(+14)" in fast and "d1" not in fast
    off = parse_settings({"tools": {"disabled": ["skill_read"]}})
    assert "skill_read" not in build_system_prompt(off, GUEST, "hello")


@pytest.mark.parametrize(
    ("request_text", "skill"),
    [
        ("帮我每天早上9点发一份新闻摘要", "schedules"),
        ("打开这个网页截图", "browser"),
        ("open the site and click the login button", "browser"),
        ("add a record to this bitable", "lark-workspace"),
        ("make a card comparing these phones", "ui-card"),
    ],
)
def test_the_request_names_the_builtin_skill_that_fits(request_text: str, skill: str) -> None:
    builtins = SkillStore().skills()
    assert [s.name for s in relevant(builtins, request_text)][:1] == [skill]
    assert relevant(builtins, "hello, how are you?") == []
