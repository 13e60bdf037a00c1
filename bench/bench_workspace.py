"""Workspace tools against FakeLark over real HTTP: a 1 MB document and a 5,000-row base.

Figures: wall time, peak Python memory (tracemalloc: the fake server runs in this process too,
so its copy of the document counts), and the Lark calls each read made (the fake's record).
Targets: ≤ 2 calls for a docx link, ≤ 3 for a wiki link.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import tracemalloc
from typing import Any

from larkbot.context import RequestContext
from tests.builtin_rt import tool_runtime
from tests.fakes.lark_server import FakeLark
from tests.fakes.lark_workspace_data import FakeBase, FakeTable
from tests.workspace_access import workspace_access
from tools.base import ToolResult
from tools.builtin.workspace import provide

ASKER = "ou_bench"
DOC, NODE, BASE = "doxcnBenchDoc0001", "wikcnBenchNode001", "bascnBenchBase001"
ROWS = 5000


def big_markdown(size: int = 1024 * 1024) -> str:
    """About `size` bytes of headings, lists, tables and code."""
    parts, n = [], 0
    while sum(len(p) for p in parts) < size:
        n += 1
        parts.append(
            f"## Section {n}\n\nSome paragraph text about item {n}, with a [link](https://x.cn/{n}).\n\n"
            f"- point {n}.a\n- point {n}.b\n\n| k | v |\n| --- | --- |\n| {n} | {n * 2} |\n\n"
            f"```python\nprint({n})\n```\n\n"
        )
    return "".join(parts)


def base_table() -> FakeTable:
    """5,000 rows: status cycles through four options, scores 0-99."""
    states = ["open", "doing", "review", "done"]
    fields = [
        {"field_name": "Title", "type": 1},
        {"field_name": "Status", "type": 3, "property": {"options": [{"name": s} for s in states]}},
        {"field_name": "Score", "type": 2},
        {"field_name": "Owner", "type": 11},
    ]
    records = [
        {
            "record_id": f"rec{i:05d}",
            "fields": {
                "Title": [{"type": "text", "text": f"task {i}"}],
                "Status": states[i % 4],
                "Score": i % 100,
                "Owner": [{"id": ASKER, "name": "Bench"}],
            },
        }
        for i in range(ROWS)
    ]
    return FakeTable(fields, records)


async def timed(fake: FakeLark, coro: Any) -> tuple[ToolResult, float, int, float]:
    """Result, seconds, Lark calls and peak MB of one tool call."""
    before = len(fake.workspace.calls)
    tracemalloc.start()
    started = time.perf_counter()
    result = await coro
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    out = result if isinstance(result, ToolResult) else ToolResult(str(result))
    return out, seconds, len(fake.workspace.calls) - before, peak


async def run() -> None:
    """Seed, read, print."""
    async with FakeLark(chat_limit=0) as fake:
        text = big_markdown()
        fake.workspace.add_doc(DOC, text, {ASKER}, "Bench")
        fake.workspace.wiki[NODE] = ("docx", DOC, "Bench (wiki)")
        fake.workspace.bases[BASE] = FakeBase({ASKER}, {ASKER}, {"tblBench": base_table()})
        tokens = {ASKER: fake.workspace.authorize(ASKER)}
        async with tool_runtime({}) as rt:
            rt.services["workspace"] = workspace_access(rt.http, fake.domain, tokens)
            tools = {t.name: t for t in provide(rt)}
            ctx = RequestContext("lark", "bench", ASKER, False)
            read, base = tools["lark_doc_read"], tools["lark_bitable_read"]
            await read.invoke(ctx, {"url": DOC})  # warm the connection
            print(f"document: {len(text.encode()) / 1e6:.2f} MB of Markdown")
            for label, url in (
                ("docx link", f"https://acme.feishu.cn/docx/{DOC}"),
                ("wiki link", f"https://acme.feishu.cn/wiki/{NODE}"),
            ):
                out, secs, calls, peak = await timed(fake, read.invoke(ctx, {"url": url}))
                pages = out.content.split(" of ", 1)[1].split("]", 1)[0]
                print(
                    f"  {label}: page 1 of {pages} in {secs * 1000:.0f} ms, {calls} Lark calls, "
                    f"peak {peak:.1f} MB, {len(out.content)} chars returned"
                )
            total, started, calls0 = int(pages), time.perf_counter(), len(fake.workspace.calls)
            for page in range(1, total + 1):
                await read.invoke(ctx, {"url": DOC, "page": page})
            secs = time.perf_counter() - started
            calls = len(fake.workspace.calls) - calls0
            print(
                f"  every page (1..{total}): {secs:.2f} s, {calls} Lark calls "
                "(page 1 fetches; the rest come from the asker's recent read)"
            )
            url = f"https://acme.feishu.cn/base/{BASE}?table=tblBench"
            for label, arguments in (
                ("filter Status = done and Score > 90", {"filter": "Status = done and Score > 90"}),
                (
                    "filter Status = review, limit 1000",
                    {"filter": "Status = review", "limit": 1000},
                ),
                ("no filter, limit 1000", {"limit": 1000}),
            ):
                call = base.invoke(ctx, {"url": url, **arguments})
                out, secs, calls, peak = await timed(fake, call)
                print(
                    f"  base {ROWS} rows, {label}: {secs * 1000:.0f} ms, {calls} Lark calls, "
                    f"peak {peak:.1f} MB, {out.content.splitlines()[0]}"
                )


def main() -> None:
    """`make bench` entry point."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["LARKBOT_HOME"] = home
        asyncio.run(run())
