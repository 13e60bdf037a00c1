"""file_read / file_write / file_list on real files: limits, caps, consent scopes, symlinks."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from larkbot.policy import ConsentStore
from tests.builtin_rt import tool_runtime
from tools.builtin import file_list, file_read, file_write
from tools.builtin.file_list import FileListTool
from tools.builtin.file_read import FileReadTool
from tools.builtin.file_write import FileWriteTool
from tools.runtime import ToolRuntime


@pytest.fixture
async def rt(home: Path) -> AsyncIterator[ToolRuntime]:
    async with tool_runtime() as runtime:
        yield runtime


@pytest.fixture
def secrets(home: Path) -> Path:
    d = home / ".secrets"
    d.mkdir()
    (d / "github").write_text("ghp_topsecret\n")
    (d / "openai").write_text("sk-other\n")
    return d


async def test_read_small_file(rt: ToolRuntime, tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("line 1\n    indented\n")
    result = await FileReadTool(rt).run(path=str(f))
    assert result.content == "line 1\n    indented\n" and not result.is_error


async def test_over_one_megabyte_needs_max_lines(rt: ToolRuntime, tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text("".join(f"row {i}\n" for i in range(200_000)))  # ~1.6 MB
    refused = await FileReadTool(rt).run(path=str(big))
    assert refused.is_error and "1 MB" in refused.content and "max_lines" in refused.content
    head = await FileReadTool(rt).run(path=str(big), max_lines=3)
    assert head.content.startswith("row 0\nrow 1\nrow 2\n")
    assert "first 3 lines shown" in head.content and "row 3\n" not in head.content


async def test_output_capped_at_8000_characters(rt: ToolRuntime, tmp_path: Path) -> None:
    f = tmp_path / "long.txt"
    f.write_text("x" * 50 + "\n" + "y" * 30_000 + "\n")
    result = await FileReadTool(rt).run(path=str(f))
    assert len(result.content) <= 8000
    assert "capped at 8,000 characters" in result.content and result.content.startswith("x" * 50)


async def test_binary_file_is_reported_not_dumped(rt: ToolRuntime, tmp_path: Path) -> None:
    f = tmp_path / "img.bin"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00" + bytes(range(256)) * 10)
    result = await FileReadTool(rt).run(path=str(f))
    assert "binary file" in result.content and "PNG" not in result.content


async def test_missing_and_directory_are_errors(rt: ToolRuntime, tmp_path: Path) -> None:
    missing = await FileReadTool(rt).run(path=str(tmp_path / "nope"))
    assert missing.is_error and "does not exist" in missing.content
    folder = await FileReadTool(rt).run(path=str(tmp_path))
    assert folder.is_error and "file_list" in folder.content


async def test_fifo_is_refused_not_blocking(rt: ToolRuntime, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = await FileReadTool(rt).run(path=str(fifo))
    assert result.is_error and "not a regular file" in result.content


async def test_one_huge_line_with_max_lines_stays_bounded(rt: ToolRuntime, tmp_path: Path) -> None:
    f = tmp_path / "oneline.txt"
    f.write_text("z" * 3_000_000)  # 3 MB, no newline
    result = await FileReadTool(rt).run(path=str(f), max_lines=1)
    assert len(result.content) <= 8000 and result.content.startswith("zzz")


async def test_tilde_is_expanded(
    rt: ToolRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "note.md").write_text("hi from home")
    assert (await FileReadTool(rt).run(path="~/note.md")).content == "hi from home"


async def test_secret_files_need_consent_per_file(
    rt: ToolRuntime, secrets: Path, tmp_path: Path
) -> None:
    tool = FileReadTool(rt)
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert tool.consent_check(path=str(plain)) is None
    ask = tool.consent_check(path=str(secrets / "github"))
    assert ask and "secret" in ask
    one, other = (tool.consent_scope(path=str(secrets / n)) for n in ("github", "openai"))
    assert one == f"file:{(secrets / 'github').resolve()}"
    store = ConsentStore()
    store.grant("s1", one, "u")
    assert store.is_granted("s1", one, "u")
    assert not store.is_granted("s1", other, "u")  # a grant for one secret does not cover another
    assert not store.is_granted("s1", tool.consent_scope(path=str(secrets)), "u")


async def test_symlink_into_secrets_is_resolved(
    rt: ToolRuntime, secrets: Path, tmp_path: Path
) -> None:
    link = tmp_path / "innocent.txt"
    link.symlink_to(secrets / "github")
    tool = FileReadTool(rt)
    assert tool.consent_check(path=str(link))
    assert tool.consent_scope(path=str(link)) == tool.consent_scope(path=str(secrets / "github"))


async def test_hard_link_into_secrets_is_judged_by_inode(
    rt: ToolRuntime, secrets: Path, tmp_path: Path
) -> None:
    link = tmp_path / "notes.txt"  # the same file as the secret, under an innocent name
    os.link(secrets / "github", link)
    assert FileReadTool(rt).consent_check(path=str(link))
    assert FileWriteTool(rt).consent_check(path=str(link), content="x")
    plain = tmp_path / "plain.txt"
    plain.write_text("hello")
    os.link(plain, tmp_path / "plain2.txt")  # a hard link, but not into the secrets
    assert FileReadTool(rt).consent_check(path=str(plain)) is None


async def test_write_creates_parents_and_appends(rt: ToolRuntime, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "out.txt"
    tool = FileWriteTool(rt)
    first = await tool.run(path=str(target), content="one\n")
    assert "Wrote 4 characters" in first.content
    await tool.run(path=str(target), content="two\n", append=True)
    assert target.read_text() == "one\ntwo\n"
    await tool.run(path=str(target), content="fresh")
    assert target.read_text() == "fresh"
    assert (await tool.run(path=str(tmp_path), content="x")).is_error


async def test_write_consent_temp_exempt_and_scope_is_directory(
    rt: ToolRuntime, tmp_path: Path, secrets: Path
) -> None:
    tool = FileWriteTool(rt)
    assert tool.consent_check(path="/tmp/larkbot-scratch/x.txt", content="x") is None
    assert tool.consent_check(path=str(tmp_path / "x.txt"), content="x") is None  # under /tmp
    outside = "/srv/larkbot-test-never-written/notes/a.md"
    ask = tool.consent_check(path=outside, content="hello")
    assert ask == "write /srv/larkbot-test-never-written/notes/a.md (5 characters)"
    assert tool.consent_scope(path=outside, content="") == "/srv/larkbot-test-never-written/notes"
    # the secrets directory is never exempt, even when it lives under /tmp (as here)
    assert tool.consent_check(path=str(secrets / "new"), content="x")


async def test_write_through_a_temp_symlink_is_not_exempt(rt: ToolRuntime, tmp_path: Path) -> None:
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    tool = FileWriteTool(rt)
    assert tool.consent_check(path=str(link / "passwd"), content="x")
    assert tool.consent_scope(path=str(link / "passwd"), content="x") == "/etc"


async def test_list_sorted_marked_with_sizes(rt: ToolRuntime, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "b.txt").write_text("12345")
    (d / "A.md").write_text("")
    (d / "sub").mkdir()
    result = await FileListTool(rt).run(path=str(d))
    lines = result.content.splitlines()
    assert lines[0] == f"{d} (3 entries)"
    assert lines[1:] == ["A.md  0 B", "b.txt  5 B", "sub/"]


async def test_list_is_bounded(rt: ToolRuntime, tmp_path: Path) -> None:
    d = tmp_path / "many"
    d.mkdir()
    for i in range(file_list.MAX_ENTRIES + 7):
        (d / f"f{i:04d}").touch()
    result = await FileListTool(rt).run(path=str(d))
    lines = result.content.splitlines()
    assert lines[-1] == "… 7 more" and len(lines) == file_list.MAX_ENTRIES + 2
    assert lines[1] == "f0000  0 B"


async def test_list_errors(rt: ToolRuntime, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.touch()
    assert (await FileListTool(rt).run(path=str(f))).is_error
    assert (await FileListTool(rt).run(path=str(tmp_path / "none"))).is_error


def test_flags(home: Path) -> None:
    read, write, listing = file_read.FileReadTool, file_write.FileWriteTool, file_list.FileListTool
    assert read.fast_path and read.private_data and not read.side_effect
    assert write.side_effect and not write.fast_path
    assert listing.private_data and not listing.side_effect and not listing.fast_path
