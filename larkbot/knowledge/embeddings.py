"""Optional semantic ranking: an OpenAI-compatible /embeddings client and vector maths."""

from __future__ import annotations

import asyncio
import math
import operator
import time
from array import array
from typing import Any

import httpx

from larkbot.config_sections import EmbeddingsConfig
from larkbot.logs import get_logger

log = get_logger(__name__)
RRF_K = 60  # the usual reciprocal-rank-fusion constant


class Embedder:
    """Calls `<base_url>/embeddings` with one bounded attempt; after a failure it rests a while.

    A down endpoint costs at most one timeout per `cooldown` seconds, never a retry storm:
    while resting, `embed` answers None at once and search falls back to BM25 alone.
    """

    def __init__(
        self, config: EmbeddingsConfig, http: httpx.AsyncClient, cooldown: float = 60.0
    ) -> None:
        self.config = config
        self.model = config.model
        self._http = http
        self._cooldown = cooldown
        self._down_until = 0.0
        self._url = config.base_url.rstrip("/") + "/embeddings"

    @property
    def available(self) -> bool:
        """False while resting after a failure."""
        return time.monotonic() >= self._down_until

    async def embed(self, texts: list[str]) -> list[array[float]] | None:
        """Unit-length vectors for `texts`, or None when the endpoint failed or is resting."""
        if not texts or not self.available:
            return None
        headers = {}
        key = self.config.api_key.get_secret_value()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            async with asyncio.timeout(self.config.timeout_seconds):
                resp = await self._http.post(
                    self._url,
                    json={"model": self.model, "input": texts},
                    headers=headers,
                    timeout=self.config.timeout_seconds,
                )
                resp.raise_for_status()
                return _parse(resp.json(), len(texts))
        except asyncio.CancelledError:
            raise
        except (TimeoutError, httpx.HTTPError, ValueError, KeyError, TypeError) as err:
            self._down_until = time.monotonic() + self._cooldown
            log.warning("knowledge_embeddings_down", url=self._url, error=repr(err)[:200])
            return None


def _parse(payload: Any, expected: int) -> list[array[float]]:
    """The `data[*].embedding` lists in input order, normalised; ValueError on a bad shape."""
    items = sorted(payload["data"], key=lambda d: d.get("index", 0))
    if len(items) != expected:
        raise ValueError(f"expected {expected} embeddings, got {len(items)}")
    return [normalize([float(x) for x in item["embedding"]]) for item in items]


def normalize(vec: list[float]) -> array[float]:
    """The vector scaled to length 1 (so a dot product is the cosine), as float32."""
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return array("f", (x / norm for x in vec))


def to_blob(vec: array[float]) -> bytes:
    """float32 bytes for the database."""
    return vec.tobytes()


def from_blob(blob: bytes) -> array[float]:
    """The vector stored by `to_blob`."""
    vec = array("f")
    vec.frombytes(blob)
    return vec


def nearest(query: array[float], vectors: dict[str, array[float]], k: int) -> list[str]:
    """The `k` paths whose vectors have the highest cosine with `query`."""
    scored = [
        (sum(map(operator.mul, query, v)), p) for p, v in vectors.items() if len(v) == len(query)
    ]
    scored.sort(reverse=True)
    return [p for _, p in scored[:k]]


def rrf(*rankings: list[str]) -> list[str]:
    """Reciprocal rank fusion of ranked path lists (best first)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, path in enumerate(ranking, start=1):
            scores[path] = scores.get(path, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda p: -scores[p])
