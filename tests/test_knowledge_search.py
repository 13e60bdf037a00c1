"""Search quality on the fixture (both tokenizers) and the index following hand-made changes."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from larkbot.config import parse_settings
from larkbot.knowledge import KnowledgeBase, default_index_path
from larkbot.knowledge.index import SearchIndex
from larkbot.knowledge.query import make_tokenizer
from tests.knowledge_fixture import QUERIES, write_fixture


@pytest.fixture(autouse=True)
def _isolated_home(home: Path) -> Path:
    """Every test runs with LARKBOT_HOME in a temp dir."""
    return home


NOTE = "---\ntitle: {title}\ntags: [{tags}]\n---\n\n{body}\n"


def recall_at_3(ranked: dict[str, list[str]]) -> float:
    """Mean share of each query's expected notes found in its top 3."""
    total = 0.0
    for query, expected in QUERIES:
        total += len(set(ranked[query][:3]) & expected) / len(expected)
    return total / len(QUERIES)


@pytest.mark.parametrize("tokenizer", ["jieba", "trigram"])
async def test_fixture_recall_at_3(
    tmp_path: Path, tokenizer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    count = write_fixture(tmp_path / "kb")
    kb = KnowledgeBase(tmp_path / "kb", tmp_path / "index.db", tokenizer=tokenizer)
    ranked: dict[str, list[str]] = {}
    for query, _ in QUERIES:
        ranked[query] = [Path(r.source).name for r in await kb.search(query, limit=10)]
    await kb.close()
    score = recall_at_3(ranked)
    mrr = sum(
        next((1 / (i + 1) for i, p in enumerate(ranked[q]) if p in exp), 0.0) for q, exp in QUERIES
    ) / len(QUERIES)
    with capsys.disabled():
        print(f"\nknowledge {tokenizer}: {count} notes, {len(QUERIES)} queries, "
              f"recall@3={score:.2f}, MRR@10={mrr:.3f}")  # fmt: skip
    assert count >= 200
    assert score >= 0.9, ranked  # jieba (the default) 1.00, trigram (fallback) 0.95


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "kafka.md").write_text(NOTE.format(title="Kafka consumer lag", tags="kafka", body="x"))
    # Listing one file is always "cheap" here, however loaded the machine: an in-place edit is
    # then seen at once (the gating of costly listings has its own test below).
    base = KnowledgeBase(root, tmp_path / "index.db", scan_budget=60.0)
    yield base
    await base.close()


async def titles(kb: KnowledgeBase, query: str) -> list[str]:
    return [r.title for r in await kb.search(query)]


async def test_hand_added_file_appears_and_deleted_disappears(kb: KnowledgeBase) -> None:
    assert await titles(kb, "火锅") == []
    path = kb.root / "hotpot.md"
    path.write_text(NOTE.format(title="重庆火锅", tags="美食", body="牛油锅底，毛肚七上八下。"))
    assert await titles(kb, "火锅") == ["重庆火锅"]
    assert await titles(kb, "毛肚") == ["重庆火锅"]
    path.unlink()
    assert await titles(kb, "火锅") == []


def age(*paths: Path) -> None:
    """Backdate files and directories, as if written long ago (not 'racy')."""
    for p in paths:
        os.utime(p, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))


async def test_hand_edited_file_is_reindexed(kb: KnowledgeBase) -> None:
    path = kb.root / "kafka.md"
    age(path, kb.root)
    assert await titles(kb, "rebalance") == []
    path.write_text(NOTE.format(title="Kafka consumer lag", tags="kafka", body="rebalance storm"))
    assert await titles(kb, "rebalance") == ["Kafka consumer lag"]
    path.write_text("# Renamed by hand\n\nno front matter any more")  # in-place, same dir mtime
    assert await titles(kb, "renamed") == ["Renamed by hand"]


async def test_costly_listing_is_gated_by_directory_mtime(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "sub").mkdir(parents=True)
    (root / "old.md").write_text(NOTE.format(title="Old", tags="", body="okapi"))
    age(root / "old.md", root / "sub", root)
    kb = KnowledgeBase(root, tmp_path / "i.db", scan_budget=0.0, rescan_seconds=3600)
    await kb.sync(force=True)
    (root / "old.md").write_text(NOTE.format(title="Old", tags="", body="edited in place"))
    age(root / "old.md")  # even the mtime looks unchanged: only a full listing would see it
    assert await titles(kb, "okapi") == ["Old"]  # gated: no listing, the index is trusted
    (root / "sub" / "new.md").write_text(NOTE.format(title="Nested note", tags="", body="zebra"))
    assert await titles(kb, "zebra") == ["Nested note"]
    tmp = root / "sub" / ".new.md.swp"  # an editor's save: write a temp file, rename over
    tmp.write_text(NOTE.format(title="Nested note", tags="", body="giraffe"))
    os.replace(tmp, root / "sub" / "new.md")
    assert await titles(kb, "giraffe") == ["Nested note"]
    await kb.close()


async def test_index_survives_restart_and_skips_hidden_and_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text(NOTE.format(title="Alpha", tags="", body="persisted"))
    (root / ".draft.md").write_text(NOTE.format(title="Hidden", tags="", body="persisted"))
    (tmp_path / "out.md").write_text(NOTE.format(title="Outside", tags="", body="persisted"))
    os.symlink(tmp_path / "out.md", root / "link.md")
    kb = KnowledgeBase(root, tmp_path / "i.db")
    assert await titles(kb, "persisted") == ["Alpha"]
    await kb.close()
    again = KnowledgeBase(root, tmp_path / "i.db", tokenizer="trigram")  # tokenizer change
    assert await titles(again, "persisted") == ["Alpha"]
    await again.close()


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "a AND OR NOT", "title:x*", "NEAR(a b)", "(", "^", "-- ; DROP TABLE x", "猫"],
)
async def test_query_syntax_is_taken_literally(kb: KnowledgeBase, query: str) -> None:
    assert isinstance(await kb.search(query), list)


async def test_short_terms_fall_back_for_trigram(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "go.md").write_text(NOTE.format(title="Go 并发", tags="go", body="用 errgroup"))
    (root / "py.md").write_text(NOTE.format(title="Python", tags="py", body="asyncio 并发"))
    kb = KnowledgeBase(root, tmp_path / "i.db", tokenizer="trigram")
    assert await titles(kb, "并发") == ["Go 并发", "Python"]  # title outranks body
    assert await titles(kb, "go") == ["Go 并发"]
    assert await titles(kb, "errgroup 并发") == ["Go 并发", "Python"]
    await kb.close()


async def test_snippet_is_short_and_around_the_match(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    body = "filler " * 100 + "the needle is here" + " filler" * 100
    (root / "n.md").write_text(NOTE.format(title="Haystack", tags="", body=body))
    kb = KnowledgeBase(root, tmp_path / "i.db")
    [hit] = await kb.search("needle")
    assert "needle" in hit.snippet and len(hit.snippet) <= 170 and hit.snippet.startswith("…")
    assert hit.source == str(root / "n.md")
    await kb.close()


def test_index_location(home: Path) -> None:
    sqlite = parse_settings({"storage": {"url": f"sqlite:///{home}/data/bot.db"}})
    assert default_index_path(sqlite) == home / "data" / "bot-knowledge.db"
    pg = parse_settings({"storage": {"url": "postgresql://u:p@db/larkbot"}})
    assert default_index_path(pg) == home / "knowledge-index.db"


@pytest.mark.parametrize("tokenizer", ["jieba", "trigram"])
def test_any_query_is_valid_fts(tmp_path: Path, tokenizer: str) -> None:
    index = SearchIndex(tmp_path / f"{tokenizer}.db", make_tokenizer(tokenizer))

    @settings(max_examples=300, deadline=None)
    @given(
        st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
        | st.sampled_from(
            ["_", "a_b", "c++", "--", "'", "#", '"', "*", "NEAR", "AND", "^a", "a:b", "（）", "、"]
        )
    )
    def search_never_fails(query: str) -> None:
        assert index.search(query, 5) == []

    search_never_fails()
    index.close()
