"""rg_search vs raw rg on a 20,000-file tree; web_fetch extraction speed and quality vs regex.

Part 1 times the rg_search tool (asyncio subprocess, bounded reading) against the same rg
command line run directly with subprocess.run, interleaved, medians of several runs. Target:
tool/raw <= 1.2x. Part 2 runs the saved pages in bench/fixtures/html/ (each with its known article
body in a .txt twin) through trafilatura (what web_fetch uses), web_fetch's regex fallback and the
design doc's plain regex stripping, and scores token-level F1 against the known body.
"""

from __future__ import annotations

import asyncio
import html as html_lib
import random
import re
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tools.builtin._bounded_exec import find_binary, scripts_dir
from tools.builtin.rg_search import RgSearchTool, rg_argv
from tools.web.extract import readable_text, regex_text

FILES = 20_000
DIRS = 200
RUNS = 5
FIXTURES = Path(__file__).parent / "fixtures" / "html"
WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "at",
    "from",
    "or",
    "an",
    "have",
    "not",
    "function",
    "return",
    "value",
    "error",
    "result",
    "config",
    "server",
    "client",
    "request",
    "response",
    "cache",
    "table",
    "index",
    "update",
    "delete",
    "insert",
    "select",
    "where",
    "order",
    "group",
    "limit",
    "offset",
    "async",
    "await",
    "import",
]


def make_tree(root: Path, needles: int = 40) -> None:
    """20,000 small source-like files in 200 directories; `needles` of them hold NEEDLE_<n>."""
    rng = random.Random(7)
    pool = [" ".join(rng.choices(WORDS, k=10)) for _ in range(997)]
    chosen = set(rng.sample(range(FILES), needles))
    (root / ".gitignore").write_text("*.tmp\n")
    per_dir = FILES // DIRS

    def write_dir(d: int) -> None:
        folder = root / f"pkg{d:03d}"
        folder.mkdir()
        for f in range(per_dir):
            n = d * per_dir + f
            start = (n * 31) % len(pool)
            lines = (pool + pool)[start : start + 30]
            if n in chosen:
                lines[n % 30] += f" NEEDLE_{n}"
            (folder / f"mod{f:03d}.py").write_text("\n".join(lines) + "\n")

    for d in range(DIRS):
        write_dir(d)


def bench_rg() -> None:
    """Median wall time of the tool vs the identical raw rg command, two patterns."""
    rg = find_binary(["rg"], [scripts_dir()])
    if rg is None:
        print("rg not found: skipping the rg_search benchmark")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        make_tree(root)
        print(
            f"tree: {FILES:,} files in {DIRS} dirs, built in {time.perf_counter() - started:.1f} s"
        )
        tool = RgSearchTool()
        with asyncio.Runner() as runner:  # one long-lived loop, as in the server
            for label, pattern in (("rare (40 hits)", r"needle_[0-9]+"), ("common", "return")):
                _compare(runner, tool, rg, root, label, pattern)


def _compare(
    runner: asyncio.Runner, tool: RgSearchTool, rg: str, root: Path, label: str, pattern: str
) -> None:
    argv = rg_argv(rg, pattern, ".", False, None)

    def raw() -> int:
        out = subprocess.run(argv, cwd=root, capture_output=True, check=False).stdout
        return out.count(b"\n")

    def mine() -> int:
        result = runner.run(tool.run(pattern=pattern, path=str(root), max_results=50))
        return len(result.content.splitlines()) - 1

    shown, printed = mine(), raw()  # also warms the page cache
    raw_times: list[float] = []
    tool_times: list[float] = []
    for i in range(RUNS * 2):  # alternate which goes first, so drift hits both
        order = ((raw, raw_times), (mine, tool_times))
        for func, times in order if i % 2 else order[::-1]:
            t0 = time.perf_counter()
            func()
            times.append(time.perf_counter() - t0)
    raw_ms = statistics.median(raw_times) * 1000
    tool_ms = statistics.median(tool_times) * 1000
    print(
        f"rg_search {label}: tool {tool_ms:.0f} ms ({shown} lines shown) vs raw rg "
        f"{raw_ms:.0f} ms ({printed:,} lines) -> ratio {tool_ms / raw_ms:.2f}x (target <= 1.2x)"
    )


def plain_regex(html: str) -> str:
    """The design doc's zero-dependency extraction: drop script/style, strip tags."""
    text = re.sub(r"<(script|style)\b.*?</\1\s*>", " ", html, flags=re.I | re.S)
    text = html_lib.unescape(re.sub(r"<[^>]+>", " ", text))
    return re.sub(r"\s+", " ", text).strip()


def tokens(text: str) -> Counter[str]:
    """Lower-cased word tokens; each CJK character is its own token."""
    return Counter(re.findall(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+", text.lower()))


def f1(found: str, truth: str) -> tuple[float, float, float]:
    """Multiset token precision, recall and F1."""
    got, want = tokens(found), tokens(truth)
    common = sum((got & want).values())
    if not common:
        return 0.0, 0.0, 0.0
    p, r = common / sum(got.values()), common / sum(want.values())
    return p, r, 2 * p * r / (p + r)


def bench_extraction() -> None:
    """Per-page time and F1 of each extractor on the saved pages."""
    pages = sorted(FIXTURES.glob("*.html"))
    methods: dict[str, Callable[[str], str]] = {
        "trafilatura (web_fetch)": lambda h: "\n".join(readable_text(h)),
        "regex fallback (web_fetch)": regex_text,
        "plain regex (design doc)": plain_regex,
    }
    size = sum(p.stat().st_size for p in pages) / len(pages) / 1024
    print(f"\nextraction: {len(pages)} pages in {FIXTURES.name}/ (avg {size:.1f} KB)")
    readable_text(pages[0].read_text())  # first call loads trafilatura's models
    summary: dict[str, tuple[float, float]] = {}
    for name, extract in methods.items():
        scores, times = [], []
        for page in pages:
            html = page.read_text(encoding="utf-8")
            truth = page.with_suffix(".txt").read_text(encoding="utf-8")
            t0 = time.perf_counter()
            for _ in range(10):
                out = extract(html)
            times.append((time.perf_counter() - t0) / 10)
            scores.append(f1(out, truth))
        p = statistics.mean(s[0] for s in scores)
        r = statistics.mean(s[1] for s in scores)
        f = statistics.mean(s[2] for s in scores)
        ms = statistics.mean(times) * 1000
        summary[name] = (f, ms)
        worst = min(zip((s[2] for s in scores), (pg.stem for pg in pages), strict=True))
        print(
            f"  {name:<27} F1 {f:.3f} (P {p:.3f} R {r:.3f}; worst {worst[0]:.2f} {worst[1]}) "
            f"{ms:.2f} ms/page"
        )
    base_f, base_ms = summary["plain regex (design doc)"]
    traf_f, traf_ms = summary["trafilatura (web_fetch)"]
    print(f"  trafilatura vs plain regex: F1 {traf_f / base_f:.2f}x, time {traf_ms / base_ms:.1f}x")


def main() -> None:
    """Both benchmarks."""
    bench_rg()
    bench_extraction()


if __name__ == "__main__":
    main()
