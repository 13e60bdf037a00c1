"""rg_search and fd_find with the real binaries on a temporary git tree with a .gitignore."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.builtin_rt import tool_runtime
from tools.builtin import fd_find, rg_search, web_fetch, web_search
from tools.builtin._bounded_exec import find_binary, run_bounded, scripts_dir
from tools.builtin.fd_find import FdFindTool
from tools.builtin.rg_search import RgSearchTool, rg_argv, secrets_glob


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small git repository: sources, ignored build output and logs, a hidden file."""
    root = tmp_path / "proj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "docs").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src" / "main.py").write_text("import os\n# TODO: parse args\nprint('hi')\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'todo later'\n")
    (root / "src" / "app.js").write_text("// TODO wire the router\n")
    (root / "docs" / "notes.md").write_text("# Notes\nTODO write docs\n")
    (root / "build" / "main.py").write_text("# TODO generated, ignored\n")
    (root / "debug.log").write_text("TODO in a log, ignored\n")
    (root / ".hidden.py").write_text("# TODO hidden\n")
    (root / "-dash.txt").write_text("--version\n")
    return root


def lines(content: str) -> list[str]:
    """The result lines after the header."""
    return sorted(content.splitlines()[1:])


async def test_rg_respects_gitignore_and_is_case_insensitive(tree: Path) -> None:
    result = await RgSearchTool().run(pattern="todo", path=str(tree))
    assert not result.is_error, result.content
    assert lines(result.content) == [
        "docs/notes.md:2:TODO write docs",
        "src/app.js:1:// TODO wire the router",
        "src/main.py:2:# TODO: parse args",
        "src/pkg/util.py:2:    return 'todo later'",
    ]


async def test_rg_case_sensitive_and_file_type(tree: Path) -> None:
    result = await RgSearchTool().run(
        pattern="TODO", path=str(tree), case_sensitive=True, file_type="py"
    )
    assert lines(result.content) == ["src/main.py:2:# TODO: parse args"]


async def test_rg_max_results_bounds_output(tree: Path) -> None:
    result = await RgSearchTool().run(pattern="todo", path=str(tree), max_results=2)
    assert len(result.content.splitlines()) == 3
    assert "(first 2; more exist" in result.content


async def test_rg_pattern_starting_with_dash_is_a_pattern(tree: Path) -> None:
    result = await RgSearchTool().run(pattern="--version", path=str(tree))
    assert lines(result.content) == ["-dash.txt:1:--version"]


async def test_rg_no_match_unknown_type_and_missing_path(tree: Path) -> None:
    none = await RgSearchTool().run(pattern="zzz-nothing", path=str(tree))
    assert not none.is_error and none.content.startswith("No matches")
    bad = await RgSearchTool().run(pattern="x", path=str(tree), file_type="nosuchtype")
    assert bad.is_error and "nosuchtype" in bad.content
    gone = await RgSearchTool().run(pattern="x", path=str(tree / "absent"))
    assert gone.is_error and "Path not found" in gone.content
    broken = await RgSearchTool().run(pattern="(unclosed", path=str(tree))
    assert broken.is_error and "regex parse error" in broken.content


async def test_rg_expands_home(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tree.parent))
    result = await RgSearchTool().run(pattern="router", path="~/proj/src")
    assert lines(result.content) == ["app.js:1:// TODO wire the router"]


async def test_fd_respects_gitignore(tree: Path) -> None:
    result = await FdFindTool().run(pattern="main", path=str(tree))
    assert lines(result.content) == ["src/main.py"]


async def test_fd_type_and_extension_filters(tree: Path) -> None:
    py = await FdFindTool().run(pattern="", path=str(tree), extension=".py")
    assert lines(py.content) == ["src/main.py", "src/pkg/util.py"]
    dirs = await FdFindTool().run(pattern="", path=str(tree), file_type="d")
    assert [line.rstrip("/") for line in lines(dirs.content)] == ["docs", "src", "src/pkg"]


async def test_fd_max_results_bounds_output(tree: Path) -> None:
    result = await FdFindTool().run(pattern="", path=str(tree), max_results=2)
    assert len(result.content.splitlines()) == 3
    assert "(first 2; more exist" in result.content


async def test_fd_nothing_found_and_bad_arguments(tree: Path) -> None:
    none = await FdFindTool().run(pattern="zzz-nothing", path=str(tree))
    assert not none.is_error and none.content.startswith("Nothing named like")
    bad = await FdFindTool().run(pattern="x", path=str(tree), file_type="q")
    assert bad.is_error
    not_dir = await FdFindTool().run(pattern="x", path=str(tree / "src" / "main.py"))
    assert not_dir.is_error and "Not a directory" in not_dir.content


async def test_missing_binaries_give_install_hints(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    rg = await RgSearchTool(extra_dirs=[]).run(pattern="x", path=str(tree))
    fd = await FdFindTool(extra_dirs=[]).run(pattern="x", path=str(tree))
    assert rg.is_error and "ripgrep (rg) is not installed" in rg.content
    assert fd.is_error and "fd is not installed" in fd.content and "fd-find" in fd.content


async def test_tool_attributes(home: Path) -> None:
    async with tool_runtime() as rt:
        tools = [
            t for module in (rg_search, fd_find, web_search, web_fetch) for t in module.provide(rt)
        ]
        assert [t.name for t in tools] == ["rg_search", "fd_find", "web_search", "web_fetch"]
        for tool in tools:
            assert tool.private_data is (tool.name in ("rg_search", "fd_find"))
            assert not tool.side_effect and not tool.fast_path
            assert tool.interfaces == frozenset({"cli", "web", "lark"})
            assert tool.openai_schema()["function"]["parameters"]["required"]
        await tools[3].aclose()  # type: ignore[attr-defined]  # web_fetch's own client


async def test_rg_search_does_not_read_the_secrets_directory(home: Path) -> None:
    """Regression: rg_search on ~/.larkbot/.secrets printed secrets without file_read's consent."""
    secrets = home / ".secrets"
    secrets.mkdir()
    (secrets / "github").write_text("ghp_TOPSECRET\n")
    async with tool_runtime() as rt:
        tool = RgSearchTool(rt)
        for path in (secrets, secrets / "github", home / ".secrets" / ".." / ".secrets"):
            result = await tool.run(pattern="ghp_", path=str(path))
            assert result.is_error and "secrets directory" in result.content
            assert "TOPSECRET" not in result.content
        (home / "notes.txt").write_text("ghp_ in a note\n")
        around = await tool.run(pattern="ghp_", path=str(home))
        assert "notes.txt" in around.content and "TOPSECRET" not in around.content


async def test_rg_search_hides_a_hard_link_to_a_secret(home: Path, tmp_path: Path) -> None:
    """A hard link is the secret under another name: its matches are judged by inode."""
    secrets = home / ".secrets"
    secrets.mkdir()
    (secrets / "github").write_text("ghp_TOPSECRET\n")
    work = tmp_path / "work"
    work.mkdir()
    os.link(secrets / "github", work / "notes:1:x.txt")  # a name that looks like a match line
    (work / "readme.txt").write_text("ghp_ is the token prefix\n")
    async with tool_runtime() as rt:
        for path in (work, work / "notes:1:x.txt"):
            result = await RgSearchTool(rt).run(pattern="ghp_", path=str(path))
            assert "TOPSECRET" not in result.content, result.content
        result = await RgSearchTool(rt).run(pattern="ghp_", path=str(work))
    assert "readme.txt:1:ghp_ is the token prefix" in result.content


async def test_rg_secrets_glob_excludes_a_visible_secrets_directory(tmp_path: Path) -> None:
    """The exclusion also holds where the secrets directory is not hidden by its name."""
    (tmp_path / "keys [1]").mkdir()
    (tmp_path / "keys [1]" / "k").write_text("token-in-secret\n")
    (tmp_path / "doc.txt").write_text("token-in-doc\n")
    binary = find_binary(["rg"], [scripts_dir()])
    assert binary is not None
    exclude = secrets_glob(tmp_path.resolve(), tmp_path / "keys [1]")
    argv = rg_argv(binary, "token", ".", False, None, exclude)
    out = await run_bounded(argv, tmp_path, 10)
    assert out.lines == ["./doc.txt:1:token-in-doc"]
