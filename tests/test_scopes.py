"""The scope manifest: the README's permission table is exactly what it prints, and the
registration's addons and `/auth`'s scopes come from it by feature."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from larkbot.config import parse_settings
from larkbot.scopes import AUTH_ALWAYS, FEATURES, MANIFEST, addons, enabled, markdown, user_scopes

README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN, END = "<!-- scopes:begin -->\n", "<!-- scopes:end -->"


def _readme_table() -> str:
    text = README.read_text(encoding="utf-8")
    block = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    # the table is indented under a numbered step; blank lines stay blank
    return "".join(line[3:] if line.strip() else line for line in block.splitlines(True))


def test_readme_permission_table_is_the_manifest() -> None:
    assert _readme_table().rstrip() == markdown().rstrip(), (
        "README.md's permission table differs from larkbot/scopes.py: paste the output of "
        "`python -m larkbot.scopes --markdown` between the scopes markers"
    )


def test_the_generator_prints_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "larkbot.scopes", "--markdown"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == markdown()


def test_every_entry_is_unique_names_a_feature_and_says_why() -> None:
    keys = [(n.kind, n.name, n.token) for n in MANIFEST]
    assert len(keys) == len(set(keys))
    for need in MANIFEST:
        assert need.feature in FEATURES and need.needed_for and need.without
        assert need.token == "tenant" or need.kind == "scope"


def test_features_follow_the_config() -> None:
    default = {n.name for n in enabled(parse_settings({}))}
    assert "cardkit:card:write" in default and "im:message.group_msg" not in default
    everyone = parse_settings({"lark": {"group_policy": "all", "streaming": False}})
    names = {n.name for n in enabled(everyone)}
    assert "im:message.group_msg" in names and "cardkit:card:write" not in names
    assert any(n.token == "user" for n in enabled(everyone))  # workspace is on by default
    off = parse_settings({"workspace": {"enabled": False}})
    assert not any(n.token == "user" for n in enabled(off))


def test_every_workspace_tool_names_its_scopes_from_the_manifest(home: object) -> None:
    from tools.workspace.bitable import BitableRead, BitableWrite
    from tools.workspace.docs import DocAppend, DocCreate, DocRead, DocSearch
    from tools.workspace.sheets import SheetRead, SheetWrite
    from tools.workspace.tasks import TaskTool

    user = {n.name for n in MANIFEST if n.token == "user"}
    kinds = (DocRead, DocSearch, DocCreate, DocAppend, SheetRead, SheetWrite, BitableRead)
    rows = {
        line.split("`")[1].split("(")[0]: line
        for line in README.read_text().splitlines()
        if line.startswith("| `lark_")
    }
    for kind in (*kinds, BitableWrite, TaskTool):
        assert kind.user_scopes and set(kind.user_scopes) <= user, kind.name
        for scope in kind.user_scopes:  # the README's workspace table names each one
            assert f"`{scope}`" in rows[kind.name], (kind.name, scope)


def test_workspace_user_scopes_feed_auth_and_the_registration() -> None:
    settings = SimpleNamespace(
        lark=SimpleNamespace(streaming=True, group_policy="mention"),
        workspace=SimpleNamespace(enabled=True),
    )
    asked = user_scopes(settings)
    assert asked[: len(AUTH_ALWAYS)] == list(AUTH_ALWAYS)
    assert "docx:document:readonly" in asked and "search:docs:read" in asked
    found = addons(enabled(settings))
    assert found["scopes"]["user"] == asked[len(AUTH_ALWAYS) :]
    assert "offline_access" not in found["scopes"]["user"]  # an OAuth request scope only
    assert found["callbacks"] == {"items": ["card.action.trigger"]}
    assert "im.message.receive_v1" in found["events"]["items"]["tenant"]


def test_addons_leave_out_empty_parts() -> None:
    only = [n for n in MANIFEST if n.name == "cardkit:card:write"]
    assert addons(only) == {"scopes": {"tenant": ["cardkit:card:write"]}}
    assert addons([]) == {}
