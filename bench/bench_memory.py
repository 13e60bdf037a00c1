"""Memory recall per turn: 10,000 memories across 500 people (and 50 group chats), on SQLite
and (under `make bench`) PostgreSQL.

Each turn's recall reads the speaker's and the chat's memories (one indexed query), ranks them
with BM25 and renders the block within `memory.recall_tokens`. Prints the latency (target:
p95 <= 10 ms; on a busy machine wall time includes waiting for a core, so the process's
CPU time per recall is printed too) and the tokens the block adds to the prompt.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from larkbot.config_sections import MemoryConfig
from larkbot.context import RequestContext
from larkbot.memory import Memory, MemoryService
from larkbot.memory.recall import RULES
from larkbot.memory.search import words
from larkbot.memory.store import memories, new_id
from larkbot.providers.tokens import text_tokens
from larkbot.storage.db import Database

PEOPLE, CHATS, MEMORIES, TURNS = 500, 50, 10_000, 1_000
FACTS = [
    "prefers answers as a Markdown table",
    "works on the billing service in Go",
    "is based in Hangzhou and starts work at 9:30",
    "wants weekly reports every Friday afternoon",
    "is allergic to peanuts",
    "uses PostgreSQL 16 and deploys with Kubernetes",
    "我喜欢简洁的回答，不要表情符号",
    "负责支付系统的上线，周四发版",
    "常用的语言是 Python 和 Rust",
    "每天早上九点开站会",
    "下周去上海出差，住在静安",
    "the team's release freeze starts on the 20th",
]
QUERIES = [
    "what should I eat for lunch?",
    "summarise the billing incident",
    "帮我写一份周报",
    "明天的站会几点？",
    "how do I deploy this to Kubernetes?",
    "给我推荐上海的餐厅",
    "draft a reply to the release thread",
    "用 Python 写个脚本",
]


def person(i: int) -> str:
    return f"ou_person{i:04d}"


async def fill(db: Database, rng: random.Random) -> None:
    """MEMORIES rows: 90 % about people, 10 % chat memories, in one transaction."""
    rows = []
    now = time.time()
    for i in range(MEMORIES):
        author = person(rng.randrange(PEOPLE))
        chat = f"oc_chat{rng.randrange(CHATS):03d}"
        scope = "chat" if i % 10 == 0 else "me"
        text = f"{rng.choice(FACTS)} (#{i})"
        rows.append(
            Memory(
                id=new_id(),
                scope=scope,
                subject=author if scope == "me" else chat,
                content=text,
                author_id=author,
                author_owner=rng.random() < 0.1,
                pinned=rng.random() < 0.1,
                chat_id=chat,
                terms=" ".join(words(text)),
                created_at=now - rng.random() * 86400 * 90,
            ).row()
        )
    async with db.engine.begin() as conn:
        await conn.execute(memories.insert(), rows)


def pct(values: list[float], q: float) -> float:
    """The q-quantile."""
    return statistics.quantiles(values, n=100)[round(q * 100) - 1]


async def run(url: str) -> None:
    """Fill, warm up, then time TURNS recalls on the database at `url`."""
    db = Database(url)
    service = MemoryService(db, MemoryConfig)
    await service.init()
    rng = random.Random(42)
    started = time.perf_counter()
    await fill(db, rng)
    took = time.perf_counter() - started
    print(f"{url.split(':')[0]}: stored {MEMORIES} memories for {PEOPLE} people in {took:.1f} s")
    turns = [
        RequestContext(
            interface="lark",
            session_id="s",
            sender_id=person(rng.randrange(PEOPLE)),
            is_owner=False,
            chat_id=f"oc_chat{rng.randrange(CHATS):03d}",
            chat_type="group",
        )
        for _ in range(TURNS)
    ]
    for ctx in turns[:20]:  # warm up: jieba's dictionary, the connection pool
        await service(ctx, rng.choice(QUERIES))
    latencies, cpu, tokens, counts = [], [], [], []
    for ctx in turns:
        t, c = time.perf_counter(), time.process_time()
        recalled = await service(ctx, rng.choice(QUERIES))
        latencies.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        tokens.append(recalled.tokens)
        counts.append(recalled.count)
    await db.close()
    p50, p95 = pct(latencies, 0.5), pct(latencies, 0.95)
    print(
        f"recall per turn: p50 {p50:.2f} ms, p95 {p95:.2f} ms (target <= 10), "
        f"max {max(latencies):.1f} ms; CPU (all threads) p50 {pct(cpu, 0.5):.2f} ms, "
        f"p95 {pct(cpu, 0.95):.2f} ms"
    )
    print(
        f"tokens added per turn: mean {statistics.mean(tokens):.0f}, p95 {pct(tokens, 0.95):.0f} "
        f"(budget {MemoryConfig().recall_tokens}); memories recalled: mean "
        f"{statistics.mean(counts):.1f}; the saving rules alone: {text_tokens(RULES)}"
    )


async def on_postgres() -> None:
    """The same on a fresh PostgreSQL database (the cluster `make bench` starts)."""
    if not os.environ.get("LARKBOT_TEST_PG_URL"):
        print("LARKBOT_TEST_PG_URL not set (`make bench` sets it): PostgreSQL not measured")
        return
    from tests.pg import fresh_database

    async with fresh_database() as url:
        await run(url)


def main() -> None:
    """Run the benchmark on SQLite in a temporary directory, then on PostgreSQL."""
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(f"sqlite:///{Path(tmp)}/bench.db"))
    asyncio.run(on_postgres())


if __name__ == "__main__":
    main()
