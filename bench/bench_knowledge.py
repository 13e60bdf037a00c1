"""Knowledge base at 10,000 notes: index build time and search latency vs a naive scan.

The notes are variations of the 205 fixture notes (their lines reshuffled and mixed with
lines of other notes, plus unique ids), so vocabulary and zh/en mix look like real notes.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from larkbot.knowledge import KnowledgeBase
from larkbot.knowledge.notes import Note, parse_note
from tests.knowledge_fixture import QUERIES, write_fixture

NOTES = 10_000
SEARCHES = 300


def fixture_notes(tmp: Path) -> list[Note]:
    """The fixture notes, parsed."""
    write_fixture(tmp / "fixture")
    return [parse_note(p.read_text(), p.stem) for p in sorted((tmp / "fixture").glob("*.md"))]


def write_notes(root: Path, base: list[Note], count: int) -> list[str]:
    """`count` generated notes under `root`; returns their lower-cased texts for the baseline."""
    rng = random.Random(42)
    pool = [ln for n in base for ln in n.body.splitlines() if ln.strip()]
    root.mkdir(parents=True)
    texts = []
    for i in range(count):
        src = base[i % len(base)]
        lines = [ln for ln in src.body.splitlines() if ln.strip()]
        rng.shuffle(lines)
        lines = lines[: max(3, len(lines) * 2 // 3)] + rng.sample(pool, 4)
        lines.append(f"ticket INC-{rng.randint(1000, 99999)} host web-{rng.randint(1, 400)}.prod")
        title = f"{src.title} #{i // len(base) + 1}"
        tags = ", ".join(json.dumps(t, ensure_ascii=False) for t in src.tags)
        body = "\n\n".join(lines)
        head = f"title: {json.dumps(title, ensure_ascii=False)}\ntags: [{tags}]"
        text = f"---\n{head}\n---\n\n{body}\n"
        (root / f"note-{i:05d}.md").write_text(text, encoding="utf-8")
        texts.append(text.lower())
    return texts


def queries(base: list[Note]) -> list[str]:
    """The 20 fixture queries, then words of random titles and tags."""
    rng = random.Random(7)
    out = [q for q, _ in QUERIES]
    while len(out) < SEARCHES:
        note = rng.choice(base)
        words = note.title.split() + note.tags
        out.append(" ".join(rng.sample(words, min(len(words), rng.choice((1, 2))))))
    return out


def naive_search(texts: list[str], query: str, limit: int = 5) -> list[int]:
    """Baseline: rank notes by how many query words they contain (a substring scan)."""
    words = query.lower().split()
    scored = [(sum(w in t for w in words), i) for i, t in enumerate(texts)]
    return [i for s, i in sorted(scored, reverse=True)[:limit] if s]


def pct(values: list[float], q: float) -> float:
    """The q-quantile, in milliseconds."""
    return statistics.quantiles(values, n=100)[round(q * 100) - 1] * 1000


async def measure(root: Path, tokenizer: str, qs: list[str]) -> tuple[float, list[float]]:
    """Build time from an empty index, then the latency of each search."""
    kb = KnowledgeBase(root, root.parent / f"{tokenizer}.db", tokenizer=tokenizer)
    started = time.perf_counter()
    await kb.start()
    build = time.perf_counter() - started
    await kb.search("warm up")
    latencies = []
    for q in qs:
        t = time.perf_counter()
        await kb.search(q, limit=5)
        latencies.append(time.perf_counter() - t)
    await kb.close()
    return build, latencies


def main() -> None:
    """Print build time and search p50/p95 for both tokenizers, against the naive scan."""
    with tempfile.TemporaryDirectory() as tmp:
        base = fixture_notes(Path(tmp))
        root = Path(tmp) / "kb"
        t = time.perf_counter()
        texts = write_notes(root, base, NOTES)
        print(f"wrote {NOTES} notes ({sum(map(len, texts)) / 1e6:.1f} MB) "
              f"in {time.perf_counter() - t:.1f} s")  # fmt: skip
        qs = queries(base)
        base_lat = []
        for q in qs[::5]:
            t = time.perf_counter()
            naive_search(texts, q)
            base_lat.append(time.perf_counter() - t)
        b50, b95 = pct(base_lat, 0.5), pct(base_lat, 0.95)
        print(f"baseline (naive substring scan in memory): p50 {b50:.1f} ms, p95 {b95:.1f} ms")
        t = time.perf_counter()
        for q in qs[:5]:  # what a tool without an index does: read every file, then scan
            naive_search([p.read_text().lower() for p in root.glob("*.md")], q)
        print(f"naive scan reading the files each time: {(time.perf_counter() - t) * 200:.0f} ms")
        for tokenizer in ("jieba", "trigram"):
            build, lat = asyncio.run(measure(root, tokenizer, qs))
            p50, p95 = pct(lat, 0.5), pct(lat, 0.95)
            print(f"{tokenizer:7s}: build {build:4.1f} s | search p50 {p50:.1f} ms, "
                  f"p95 {p95:.1f} ms"
                  f" (target < 30), max {max(lat) * 1000:.0f} ms | p50 {b50 / p50:.0f}x, "
                  f"p95 {b95 / p95:.0f}x faster than the baseline")  # fmt: skip


if __name__ == "__main__":
    main()
