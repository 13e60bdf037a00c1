"""Semantic ranking against a fake /embeddings server, and BM25 answers when it is down."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from larkbot.config_sections import EmbeddingsConfig
from larkbot.knowledge import KnowledgeBase
from larkbot.knowledge.embeddings import Embedder
from tests.fakes.embeddings import FakeEmbeddings


@pytest.fixture(autouse=True)
def _isolated_home(home: Path) -> Path:
    """Every test runs with LARKBOT_HOME in a temp dir."""
    return home


NOTES = {
    "cold-brew.md": ("冷萃咖啡", "coffee", "粉水比 1:8，冷藏 16 小时。"),
    "sleep.md": ("Sleep hygiene", "health", "No caffeine after 2pm; keep the bedroom dark."),
    "kyoto.md": ("京都五日游", "旅行", "岚山小火车要提前预约。"),
    "pg.md": ("PostgreSQL replication slots", "postgres", "Drop inactive slots."),
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    kb_root = tmp_path / "kb"
    kb_root.mkdir()
    for name, (title, tag, body) in NOTES.items():
        (kb_root / name).write_text(f"---\ntitle: {title}\ntags: [{tag}]\n---\n\n{body}\n")
    return kb_root


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def make_kb(
    root: Path, http: httpx.AsyncClient, base_url: str, timeout: float = 1.0
) -> KnowledgeBase:
    config = EmbeddingsConfig(base_url=base_url, model="fake-1", timeout_seconds=timeout)
    return KnowledgeBase(root, root.parent / "index.db", embedder=Embedder(config, http))


async def names(kb: KnowledgeBase, query: str) -> list[str]:
    return [Path(r.source).name for r in await kb.search(query)]


async def test_embeddings_change_the_ranking(root: Path, http: httpx.AsyncClient) -> None:
    plain = KnowledgeBase(root, root.parent / "plain.db")
    assert await names(plain, "espresso") == []  # no word in common with any note
    assert await names(plain, "caffeine") == ["sleep.md"]
    await plain.close()
    async with FakeEmbeddings() as fake:
        kb = make_kb(root, http, fake.base_url)
        assert (await names(kb, "espresso"))[0] == "cold-brew.md"  # meaning, not words
        assert (await names(kb, "caffeine"))[:2] == ["sleep.md", "cold-brew.md"]  # fused
        documents = sum(len(r["input"]) for r in fake.requests)
        assert documents == len(NOTES) + 2  # every note embedded once, plus two queries
        await kb.close()

        with sqlite3.connect(root.parent / "index.db") as db:
            assert (
                db.execute("SELECT count(*) FROM kb_vectors WHERE model='fake-1'").fetchone()[0]
                == 4
            )
        again = make_kb(root, http, fake.base_url)  # vectors persisted: only the query is sent
        assert (await names(again, "latte"))[0] == "cold-brew.md"
        assert len(fake.requests) == 4  # one batch of notes, three queries
        (root / "kyoto.md").write_text("---\ntitle: Kyoto\n---\n\nespresso bars near the station")
        await again.search("espresso")
        assert fake.requests[-2]["input"] == ["Kyoto\n\nespresso bars near the station"]
        await again.close()


async def test_search_answers_when_endpoint_is_down(root: Path, http: httpx.AsyncClient) -> None:
    fake = await FakeEmbeddings().start()
    kb = make_kb(root, http, fake.base_url)
    assert (await names(kb, "espresso"))[0] == "cold-brew.md"
    await fake.stop()
    started = time.monotonic()
    assert await names(kb, "caffeine") == ["sleep.md"]  # BM25 alone
    assert await names(kb, "espresso") == []
    assert time.monotonic() - started < 3
    await kb.close()


async def test_hung_endpoint_is_bounded_and_not_retried(
    root: Path, http: httpx.AsyncClient
) -> None:
    async with FakeEmbeddings() as fake:
        fake.hang = True
        kb = make_kb(root, http, fake.base_url, timeout=0.3)
        started = time.monotonic()
        assert await names(kb, "caffeine") == ["sleep.md"]
        # the 0.3 s timeout, not the hang (for ever); retries are counted below, so the bound
        # can be wide enough for a loaded machine
        assert time.monotonic() - started < 20
        for _ in range(5):
            assert await names(kb, "caffeine") == ["sleep.md"]
        assert len(fake.requests) == 1  # resting after the failure: no retry storm
        await kb.close()
