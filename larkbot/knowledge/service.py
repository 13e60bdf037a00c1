"""KnowledgeBase: the notes directory, its search index and optional embeddings, as one service."""

from __future__ import annotations

import asyncio
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import httpx

from larkbot.config import Settings
from larkbot.config_sections import EmbeddingsConfig
from larkbot.knowledge.embeddings import Embedder, from_blob, nearest, rrf, to_blob
from larkbot.knowledge.entries import Mode, add_entry, edit_entry, read_entry
from larkbot.knowledge.index import CANDIDATES, SearchIndex
from larkbot.knowledge.notes import Note, resolve_source
from larkbot.knowledge.query import make_tokenizer, snippet
from larkbot.knowledge.scan import Signature, dirs_changed, list_notes, load_doc
from larkbot.logs import get_logger

log = get_logger(__name__)
RACY_NS = 100_000_000  # a file changed this close to a scan may change again unseen: recheck it
EMBED_BATCH = 64
EMBED_PER_SEARCH = 256  # notes embedded per search at most; the rest on the next ones
Vector: TypeAlias = "array[float]"


@dataclass(frozen=True)
class SearchResult:
    """One hit for the model: where it is, what it is, and the matching passage."""

    source: str
    title: str
    tags: tuple[str, ...]
    snippet: str


def default_index_path(settings: Settings) -> Path:
    """Next to the SQLite database (`<name>-knowledge.db`); under LARKBOT_HOME otherwise."""
    # Its own file rather than tables in the main database: the index is derived data that can
    # be deleted and rebuilt, a 10k-note rebuild would hold the main database's write lock
    # for seconds, and one code path serves both SQLite and PostgreSQL deployments.
    url = settings.storage.url
    if url.startswith("sqlite:///") and ":memory:" not in url:
        db = Path(url.removeprefix("sqlite:///")).expanduser()
        return db.with_name(f"{db.stem}-knowledge.db")
    return settings.home / "knowledge-index.db"


class KnowledgeBase:
    """Markdown notes under `root`, searchable in Chinese and English, kept in step with disk.

    Files changed by hand are found by listing (path, mtime, size) before a search; when a
    listing is costly (> `scan_budget` s) it runs at most every `rescan_seconds` unless a
    directory's mtime moved. All file and SQLite work runs in worker threads.
    """

    def __init__(
        self,
        root: Path,
        index_path: Path,
        *,
        tokenizer: str = "jieba",
        embedder: Embedder | None = None,
        rescan_seconds: float = 2.0,
        scan_budget: float = 0.005,
    ) -> None:
        self.root = root.expanduser().absolute()
        self.index_path = index_path
        self._tokenizer_name = tokenizer
        self._embedder = embedder
        self._rescan = rescan_seconds
        self._budget = scan_budget
        self._index: SearchIndex | None = None
        self._start_lock = asyncio.Lock()
        self._sync_lock = asyncio.Lock()
        self._entry_locks: dict[str, asyncio.Lock] = {}
        self._embed_lock = asyncio.Lock()  # concurrent searches embed each note once
        self._known: dict[str, Signature] = {}
        self._dirs: dict[str, int] = {}
        self._racy = True
        self._last_cost = 0.0
        self._last_full = 0.0
        self._vectors: dict[str, tuple[str, Vector]] | None = None

    @classmethod
    def from_settings(cls, settings: Settings, http: httpx.AsyncClient) -> KnowledgeBase:
        """The service for `knowledge:` settings (embeddings only when a base_url is set)."""
        emb: EmbeddingsConfig = settings.knowledge.embeddings
        embedder = Embedder(emb, http) if emb.base_url else None
        return cls(settings.knowledge_dir, default_index_path(settings), embedder=embedder)

    async def start(self) -> SearchIndex:
        """Open the index (building it on first use) and sync it with the files."""
        async with self._start_lock:
            if self._index is None:
                self._index = await asyncio.to_thread(self._open)
                await self.sync(force=True)
            return self._index

    def _open(self) -> SearchIndex:
        try:
            tokenizer = make_tokenizer(self._tokenizer_name)
        except ImportError:
            log.warning("knowledge_jieba_missing_using_trigram")
            tokenizer = make_tokenizer("trigram")
        index = SearchIndex(self.index_path, tokenizer)
        self._known = index.listing()
        return index

    async def close(self) -> None:
        """Close the index."""
        if self._index is not None:
            await asyncio.to_thread(self._index.close)
            self._index = None

    async def sync(self, force: bool = False) -> None:
        """Re-index notes added, edited or deleted on disk since the last look."""
        index = self._index or await self.start()
        async with self._sync_lock:
            await asyncio.to_thread(self._sync_blocking, index, force)

    def _sync_blocking(self, index: SearchIndex, force: bool) -> None:
        cheap = self._last_cost <= self._budget
        stale = time.monotonic() - self._last_full >= self._rescan
        if not (force or self._racy or cheap or stale or dirs_changed(self.root, self._dirs)):
            return
        began, start_ns = time.perf_counter(), time.time_ns()
        listing = list_notes(self.root)
        self._last_cost, self._last_full = time.perf_counter() - began, time.monotonic()
        racy_after = start_ns - RACY_NS
        listed = {p: (-1, s[1]) if s[0] >= racy_after else s for p, s in listing.files.items()}
        changed = [p for p, sig in listed.items() if self._known.get(p) != sig]
        gone = [p for p in self._known if p not in listed]
        docs = [d for p in changed if (d := load_doc(self.root, p, listed[p])) is not None]
        index.apply(docs, gone)
        loaded = {d.path for d in docs}
        self._known = {p: s for p, s in listed.items() if p in loaded or p not in changed}
        self._dirs = listing.dirs
        self._racy = listing.newest_ns >= racy_after
        if docs or gone:
            log.info("knowledge_indexed", changed=len(docs), removed=len(gone))

    async def search(self, query: str, limit: int = 5) -> list[SearchResult]:
        """The best notes for `query`: BM25, fused with embeddings when they are available."""
        index = self._index or await self.start()
        await self.sync()
        limit = max(1, min(limit, 50))
        fuse = self._embedder is not None and self._embedder.available
        pairs = await asyncio.to_thread(index.search, query, CANDIDATES if fuse else limit)
        ranked = [p for p, _ in pairs]
        semantic = await self._semantic(index, query) if fuse else None
        if semantic:
            ranked = rrf(ranked, semantic)
        hits = await asyncio.to_thread(index.get_many, ranked[:limit])
        highlight = index.tokenizer.parse(query).highlight
        return [
            SearchResult(self.source(h.path), h.title, h.tags, snippet(h.body, highlight))
            for h in hits
        ]

    async def _semantic(self, index: SearchIndex, query: str) -> list[str] | None:
        """Paths ranked by cosine to the query, or None when embeddings are off or down."""
        emb = self._embedder
        if emb is None or not emb.available:
            return None
        async with self._embed_lock:
            vectors = await self._embed_pending(index, emb)
        qvec = await emb.embed([query]) if vectors is not None else None
        if not qvec or not vectors:
            return None
        return await asyncio.to_thread(nearest, qvec[0], vectors, CANDIDATES)

    async def _embed_pending(self, index: SearchIndex, emb: Embedder) -> dict[str, Vector] | None:
        """Embed notes whose vector is missing or stale; the current vectors by path."""
        if self._vectors is None:
            stored = await asyncio.to_thread(index.vectors, emb.model)
            self._vectors = {p: (h, from_blob(b)) for p, (h, b) in stored.items()}
        hashes = await asyncio.to_thread(index.hashes)
        pending = [p for p, h in hashes.items() if self._vectors.get(p, ("",))[0] != h]
        for i in range(0, min(len(pending), EMBED_PER_SEARCH), EMBED_BATCH):
            batch = pending[i : i + EMBED_BATCH]
            docs = await asyncio.to_thread(index.get_many, batch)
            texts = [f"{h.title}\n{' '.join(h.tags)}\n{h.body}"[:4000] for h in docs]
            vecs = await emb.embed(texts)
            if vecs is None:
                return None
            rows = [(h.path, hashes[h.path], to_blob(v)) for h, v in zip(docs, vecs, strict=True)]
            await asyncio.to_thread(index.store_vectors, emb.model, rows)
            self._vectors.update(
                {h.path: (hashes[h.path], v) for h, v in zip(docs, vecs, strict=True)}
            )
        return {p: v for p, (h, v) in self._vectors.items() if hashes.get(p) == h}

    def source(self, rel: str) -> str:
        """The `source` shown to the model for an indexed path: absolute, inside root."""
        return str(self.root / rel)

    def resolve(self, source: str) -> tuple[Path, str]:
        """The real path of `source` and its index key; KnowledgeError when it escapes root."""
        real = resolve_source(self.root, source)
        return real, real.relative_to(self.root.resolve()).as_posix()

    async def read(self, source: str) -> tuple[str, Note]:
        """The entry at `source` (relative to the directory, or absolute inside it)."""
        real, rel = await asyncio.to_thread(self.resolve, source)
        return self.source(rel), await asyncio.to_thread(read_entry, real)

    async def add(self, content: str, title: str = "", tags: list[str] | None = None) -> str:
        """Create a new entry and index it; returns its `source`."""
        index = self._index or await self.start()
        path = await asyncio.to_thread(add_entry, self.root, content, title, tags)
        rel = path.relative_to(self.root).as_posix()
        await self._reindex(index, rel)
        return self.source(rel)

    async def edit(
        self,
        source: str,
        content: str,
        mode: Mode = "append",
        title: str | None = None,
        tags: list[str] | None = None,
    ) -> str:
        """Append to / replace an entry's body (serialised per entry) and re-index it."""
        index = self._index or await self.start()
        real, rel = await asyncio.to_thread(self.resolve, source)
        lock = self._entry_locks.setdefault(rel, asyncio.Lock())
        async with lock:
            await asyncio.to_thread(edit_entry, self.root, real, rel, content, mode, title, tags)
            await self._reindex(index, rel)
        return self.source(rel)

    async def _reindex(self, index: SearchIndex, rel: str) -> None:
        """Index one entry we just wrote (its signature counts as racy: recheck it next time)."""

        def work() -> None:
            st = (self.root / rel).stat()
            doc = load_doc(self.root, rel, (-1, st.st_size))
            if doc is not None:
                index.apply([doc], [])
                self._known[rel] = (-1, st.st_size)
                self._racy = True

        async with self._sync_lock:
            await asyncio.to_thread(work)
