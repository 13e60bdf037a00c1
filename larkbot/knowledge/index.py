"""The SQLite FTS5 index of the notes (synchronous; the service calls it from a worker thread)."""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from larkbot.knowledge.query import Query, Tokenizer

# bm25() column weights: a match in the title counts most, then tags, then the body.
WEIGHTS = (10.0, 5.0, 1.0)
_LIKE_WEIGHTS = (1.0, 0.6, 0.3)
CANDIDATES = 100

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kb_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kb_notes(
  id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, mtime_ns INTEGER NOT NULL,
  size INTEGER NOT NULL, title TEXT NOT NULL, tags TEXT NOT NULL, body TEXT NOT NULL,
  hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kb_vectors(
  path TEXT PRIMARY KEY, hash TEXT NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL);
"""


@dataclass(frozen=True)
class Doc:
    """One note as indexed: where it is, its stat signature and its text."""

    path: str
    mtime_ns: int
    size: int
    title: str
    tags: tuple[str, ...]
    body: str
    hash: str


@dataclass(frozen=True)
class Hit:
    """An indexed note as search shows it."""

    path: str
    title: str
    tags: tuple[str, ...]
    body: str


class SearchIndex:
    """Notes table + FTS5 table in one SQLite file; one connection guarded by a lock."""

    def __init__(self, path: Path, tokenizer: Tokenizer) -> None:
        self.path = path
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._ensure_fts()

    def _ensure_fts(self) -> None:
        """(Re)create the FTS table when the tokenizer changed; refill it from kb_notes."""
        row = self._db.execute("SELECT value FROM kb_meta WHERE key='tokenizer'").fetchone()
        if row and row[0] == self.tokenizer.name:
            return
        with self._tx():
            self._db.execute("DROP TABLE IF EXISTS kb_fts")
            self._db.execute(
                "CREATE VIRTUAL TABLE kb_fts USING fts5(title, tags, body, "
                f"tokenize={_sql_str(self.tokenizer.fts_tokenize)})"
            )
            rows = self._db.execute("SELECT id, title, tags, body FROM kb_notes").fetchall()
            for id_, title, tags, body in rows:
                self._insert_fts(id_, title, tuple(json.loads(tags)), body)
            self._db.execute(
                "INSERT OR REPLACE INTO kb_meta VALUES('tokenizer', ?)", (self.tokenizer.name,)
            )

    def _tx(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db  # sqlite3.Connection as a context manager commits or rolls back

    def _insert_fts(self, id_: int, title: str, tags: tuple[str, ...], body: str) -> None:
        doc = self.tokenizer.doc
        self._db.execute(
            "INSERT INTO kb_fts(rowid, title, tags, body) VALUES(?, ?, ?, ?)",
            (id_, doc(title), doc(" ".join(tags)), doc(body)),
        )

    def listing(self) -> dict[str, tuple[int, int]]:
        """Every indexed path with its (mtime_ns, size) at indexing time."""
        with self._lock:
            rows = self._db.execute("SELECT path, mtime_ns, size FROM kb_notes").fetchall()
        return {p: (m, s) for p, m, s in rows}

    def apply(self, upserts: list[Doc], deletes: list[str]) -> None:
        """Index new or changed notes and forget removed ones, in one transaction."""
        if not upserts and not deletes:
            return
        with self._lock, self._tx():
            for path in [*deletes, *(d.path for d in upserts)]:
                row = self._db.execute("SELECT id FROM kb_notes WHERE path=?", (path,)).fetchone()
                if row:
                    self._db.execute("DELETE FROM kb_fts WHERE rowid=?", (row[0],))
                    self._db.execute("DELETE FROM kb_notes WHERE id=?", (row[0],))
            for d in upserts:
                cur = self._db.execute(
                    "INSERT INTO kb_notes(path, mtime_ns, size, title, tags, body, hash) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?)",
                    (d.path, d.mtime_ns, d.size, d.title, json.dumps(d.tags), d.body, d.hash),
                )
                assert cur.lastrowid is not None
                self._insert_fts(cur.lastrowid, d.title, d.tags, d.body)
            if deletes:
                marks = ",".join("?" * len(deletes))
                self._db.execute(f"DELETE FROM kb_vectors WHERE path IN ({marks})", deletes)

    def search(self, text: str, limit: int) -> list[tuple[str, float]]:
        """The best `limit` (path, score) pairs by BM25 (plus LIKE for too-short terms)."""
        q = self.tokenizer.parse(text)
        with self._lock:
            scores = self._fts_scores(q) if q.match else {}
            short = self._like_scores(q) if q.short else {}
            n_fts, n_short = len(q.terms) - len(q.short), len(q.short)
            total = {
                i: (n_fts * scores.get(i, 0.0) + n_short * short.get(i, 0.0)) / (n_fts + n_short)
                for i in scores.keys() | short.keys()
            }
            best = sorted(total, key=lambda i: (-total[i], i))[:limit]
            if not best:
                return []
            rows = self._db.execute(
                f"SELECT id, path FROM kb_notes WHERE id IN ({','.join('?' * len(best))})", best
            ).fetchall()
        paths = dict(rows)
        return [(paths[i], total[i]) for i in best if i in paths]

    def _fts_scores(self, q: Query) -> dict[int, float]:
        """BM25 of the top candidates, scaled to (0, 1] by the best one."""
        rows = self._db.execute(
            "SELECT rowid, -bm25(kb_fts, ?, ?, ?) AS s FROM kb_fts WHERE kb_fts MATCH ? "
            "ORDER BY s DESC LIMIT ?",
            (*WEIGHTS, q.match, CANDIDATES),
        ).fetchall()
        top = max((s for _, s in rows), default=0.0) or 1.0
        return {i: s / top for i, s in rows}

    def _like_scores(self, q: Query) -> dict[int, float]:
        """Fallback for terms too short for trigrams: field hits of each term, averaged."""
        like = " OR ".join(f"{col} LIKE ? ESCAPE '\\'" for col in ("title", "tags", "body"))
        where = " OR ".join(f"({like})" for _ in q.short)
        args = [f"%{_like_escape(t)}%" for t in q.short for _ in range(3)]
        rows = self._db.execute(
            f"SELECT id, lower(title), lower(tags), lower(body) FROM kb_notes WHERE {where} "
            "LIMIT 1000",
            args,
        ).fetchall()
        out: dict[int, float] = {}
        for id_, *fields in rows:
            hits = [max((w for w, f in zip(_LIKE_WEIGHTS, fields, strict=True) if t in f),
                        default=0.0) for t in q.short]  # fmt: skip
            out[id_] = sum(hits) / len(q.short)
        return out

    def get_many(self, paths: list[str]) -> list[Hit]:
        """The indexed notes among `paths`, in the given order."""
        if not paths:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT path, title, tags, body FROM kb_notes "
                f"WHERE path IN ({','.join('?' * len(paths))})",
                paths,
            ).fetchall()
        found = {p: Hit(p, t, tuple(json.loads(g)), b) for p, t, g, b in rows}
        return [found[p] for p in paths if p in found]

    def hashes(self) -> dict[str, str]:
        """Content hash of every indexed note (to find notes whose vector is stale)."""
        with self._lock:
            return dict(self._db.execute("SELECT path, hash FROM kb_notes").fetchall())

    def vectors(self, model: str) -> dict[str, tuple[str, bytes]]:
        """Stored embedding vectors for `model`: path -> (content hash, float32 blob)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path, hash, vec FROM kb_vectors WHERE model=?", (model,)
            ).fetchall()
        return {p: (h, v) for p, h, v in rows}

    def store_vectors(self, model: str, items: list[tuple[str, str, bytes]]) -> None:
        """Save (path, hash, vector blob) rows for `model`."""
        with self._lock, self._tx():
            self._db.executemany(
                "INSERT OR REPLACE INTO kb_vectors(path, hash, model, vec) VALUES(?, ?, ?, ?)",
                [(p, h, model, v) for p, h, v in items],
            )

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _like_escape(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
