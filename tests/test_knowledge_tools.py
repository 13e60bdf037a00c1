"""The four knowledge tools through `provide(rt)`: round trip, refusals, concurrent edits."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from larkbot.config import LiveSettings, parse_settings
from larkbot.knowledge import KnowledgeBase
from larkbot.storage.db import Database
from tools.base import BaseTool, ToolResult
from tools.builtin import knowledge
from tools.runtime import ToolRuntime


@pytest.fixture(autouse=True)
def _isolated_home(home: Path) -> Path:
    """Every test runs with LARKBOT_HOME in a temp dir."""
    return home


ROUNDS = 40


@pytest.fixture
async def tools(home: Path) -> AsyncIterator[dict[str, BaseTool]]:
    settings = parse_settings({})
    async with httpx.AsyncClient() as http:
        db = Database(settings.storage.url)
        rt = ToolRuntime("cli", LiveSettings(settings), http, db)
        provided = knowledge.provide(rt)
        assert isinstance(rt.services["knowledge"], KnowledgeBase)
        yield {t.name: t for t in provided}
        await rt.services["knowledge"].close()
        await db.close()


async def call(tool: BaseTool, **kwargs: Any) -> ToolResult:
    out = await tool.run(**kwargs)
    return out if isinstance(out, ToolResult) else ToolResult(out)


def source_of(result: ToolResult) -> str:
    return result.content.rsplit("source: ", 1)[1].strip()


def test_attributes(tools: dict[str, BaseTool]) -> None:
    assert sorted(tools) == [
        "knowledge_add",
        "knowledge_edit",
        "knowledge_read",
        "knowledge_search",
    ]
    assert tools["knowledge_add"].side_effect and tools["knowledge_edit"].side_effect
    assert tools["knowledge_search"].private_data and tools["knowledge_read"].private_data
    assert not tools["knowledge_search"].side_effect and not tools["knowledge_add"].fast_path
    assert all(t.interfaces == frozenset({"cli", "web", "lark"}) for t in tools.values())


async def test_add_search_read_edit_round_trip(tools: dict[str, BaseTool], home: Path) -> None:
    add = tools["knowledge_add"]
    added = await call(
        add, content="先冷水焯水，再炒糖色。", title="红烧肉 做法", tags=["菜谱", "家常菜"]
    )
    source = source_of(added)
    assert source == str(home / "knowledge" / "红烧肉-做法.md")
    again = source_of(await call(add, content="x", title="红烧肉 做法"))
    assert again.endswith("红烧肉-做法-2.md")

    found = await call(tools["knowledge_search"], query="糖色")
    assert "红烧肉 做法" in found.content and source in found.content and "菜谱" in found.content

    await call(tools["knowledge_edit"], source=source, content="小火炖 60 分钟。")
    read = await call(tools["knowledge_read"], source="红烧肉-做法.md")  # relative works too
    assert "tags: 菜谱, 家常菜" in read.content and "title: 红烧肉 做法" in read.content
    assert read.content.endswith("先冷水焯水，再炒糖色。\n\n小火炖 60 分钟。")

    await call(tools["knowledge_edit"], source=source, content="全新正文", mode="replace")
    text = Path(source).read_text()
    assert "全新正文" in text and "糖色" not in text and "title: 红烧肉 做法" in text
    await call(tools["knowledge_edit"], source=source, content="v3", mode="replace",
               title="Braised pork", tags=["recipe"])  # fmt: skip
    read = await call(tools["knowledge_read"], source=source)
    assert "title: Braised pork\ntags: recipe" in read.content
    created = [ln for ln in read.content.splitlines() if ln.startswith(("created", "updated"))]
    assert len(created) == 2 and created[0] != "created: "
    assert (await call(tools["knowledge_search"], query="Braised")).content.count("source:") == 1


@pytest.mark.parametrize("source", ["../config.yaml", "../x.md", "/etc/passwd", "/tmp/x.md"])
async def test_escapes_refused(tools: dict[str, BaseTool], source: str) -> None:
    for name in ("knowledge_read", "knowledge_edit"):
        result = await call(tools[name], source=source, content="pwned")
        assert result.is_error and ("outside the knowledge directory" in result.content
                                    or "not a Markdown" in result.content)  # fmt: skip


async def test_symlink_out_refused_by_tools(tools: dict[str, BaseTool], home: Path) -> None:
    (home / "knowledge").mkdir()
    (home / "secret.md").write_text("token")
    os.symlink(home / "secret.md", home / "knowledge" / "evil.md")
    for name in ("knowledge_read", "knowledge_edit"):
        result = await call(tools[name], source="evil.md", content="pwned")
        assert result.is_error and "symlink" in result.content
    assert (home / "secret.md").read_text() == "token"


async def test_errors_are_results(tools: dict[str, BaseTool]) -> None:
    missing = await call(tools["knowledge_read"], source="nope.md")
    assert missing.is_error and "knowledge_search" in missing.content
    assert (await call(tools["knowledge_search"], query="  ")).is_error
    assert (await call(tools["knowledge_add"], content="", title="")).is_error
    src = source_of(await call(tools["knowledge_add"], content="a", title="t"))
    assert (await call(tools["knowledge_edit"], source=src, content="b", mode="prepend")).is_error


async def test_twenty_concurrent_appends_all_kept(tools: dict[str, BaseTool]) -> None:
    src = source_of(await call(tools["knowledge_add"], content="start", title="log"))
    edits = [call(tools["knowledge_edit"], source=src, content=f"line {i}") for i in range(20)]
    results = await asyncio.gather(*edits)
    assert not any(r.is_error for r in results)
    text = Path(src).read_text()
    assert all(f"line {i}\n" in text for i in range(20)) and "start" in text


async def test_appends_from_another_process_are_kept(tmp_path: Path) -> None:
    root, index = tmp_path / "kb", tmp_path / "index.db"
    kb = KnowledgeBase(root, index, tokenizer="trigram")
    src = await kb.add("start", "shared")
    script = textwrap.dedent(f"""
        import asyncio, sys
        from pathlib import Path
        from larkbot.knowledge import KnowledgeBase
        async def main():
            kb = KnowledgeBase(Path({str(root)!r}), Path({str(index)!r}), tokenizer="trigram")
            await kb.start()
            print("ready", flush=True)
            sys.stdin.readline()
            for i in range(N):
                await kb.edit({src!r}, f"child {{i}}")
            await kb.close()
        asyncio.run(main())
    """).replace("N", str(ROUNDS))
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdin=PIPE, stdout=PIPE
    )
    assert child.stdin and child.stdout

    async def ready() -> None:
        while (line := await child.stdout.readline()) != b"ready\n":  # type: ignore[union-attr]
            assert line, "child exited before it was ready"

    await asyncio.wait_for(ready(), 30)
    child.stdin.write(b"go\n")  # both processes start appending at the same moment
    await child.stdin.drain()
    for i in range(ROUNDS):
        await kb.edit(src, f"parent {i}")
    assert await asyncio.wait_for(child.wait(), 30) == 0
    text = Path(src).read_text()
    assert all(f"parent {i}\n" in text and f"child {i}\n" in text for i in range(ROUNDS))
    assert [r.title for r in await kb.search("child")] == ["shared"]
    await kb.close()
