"""FakeEmbeddings: an OpenAI-compatible POST /v1/embeddings server on 127.0.0.1 (aiohttp).

    async with FakeEmbeddings() as emb:
        # point knowledge.embeddings.base_url at emb.base_url; inspect emb.requests

Vectors are deterministic "concept counts": dimension i counts how often the words of
CONCEPTS[i] occur in the text, so "caffeine" lands next to a note about 咖啡 with no shared word.
`hang = True` makes every request wait until the server stops (for timeout tests).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

CONCEPTS: list[tuple[str, ...]] = [
    ("coffee", "咖啡", "caffeine", "espresso", "latte", "cold brew"),
    ("sleep", "睡眠", "insomnia", "bedtime"),
    ("travel", "旅行", "trip", "itinerary", "flight"),
    ("database", "数据库", "postgres", "sql", "replication"),
    ("cat", "猫", "kitten", "feline"),
]


def concept_vector(text: str) -> list[float]:
    """The deterministic vector of `text` (a small constant keeps it non-zero)."""
    low = text.lower()
    return [float(sum(low.count(w) for w in words)) for words in CONCEPTS] + [0.01]


class FakeEmbeddings:
    """The fake server; `requests` records every JSON body received."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.hang = False
        self._stopped = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self.hang:
            await self._stopped.wait()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": concept_vector(t)}
            for i, t in enumerate(inputs)
        ]
        return web.json_response({"object": "list", "data": data, "model": body.get("model")})

    async def start(self) -> FakeEmbeddings:
        """Listen on an ephemeral loopback port."""
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def stop(self) -> None:
        """Stop listening (hung requests are released first)."""
        self._stopped.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeEmbeddings:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
