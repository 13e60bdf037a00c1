"""Token usage per turn, per chat and per day, from the providers' `usage` fields; optional cost.

Field names differ: OpenAI nests `completion_tokens_details.reasoning_tokens` and
`prompt_tokens_details.cached_tokens` (platform.openai.com/docs/api-reference/chat/object);
DeepSeek reports `prompt_cache_hit_tokens` (api-docs.deepseek.com/guides/kv_cache) and, in
thinking mode, `completion_tokens_details.reasoning_tokens`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from larkbot.config_sections import PriceConfig
from larkbot.storage.db import Database, metadata

llm_usage = sa.Table(
    "llm_usage",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(255), nullable=False, index=True),
    sa.Column("day", sa.String(10), nullable=False, index=True),  # YYYY-MM-DD, UTC
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("model", sa.String(255), nullable=False),
    sa.Column("requests", sa.Integer, nullable=False),
    sa.Column("prompt", sa.Integer, nullable=False),
    sa.Column("completion", sa.Integer, nullable=False),
    sa.Column("reasoning", sa.Integer, nullable=False),
    sa.Column("cached", sa.Integer, nullable=False),
    sa.Column("cost", sa.Float, nullable=False),
    sa.Column("currency", sa.String(8), nullable=False),
)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


@dataclass
class Usage:
    """Tokens of one or more requests."""

    requests: int = 0
    prompt: int = 0
    completion: int = 0
    reasoning: int = 0  # part of completion
    cached: int = 0  # part of prompt

    @classmethod
    def from_wire(cls, usage: dict[str, Any] | None) -> Usage:
        """Parse one response's `usage` object (missing fields count as zero)."""
        if not isinstance(usage, dict):
            return cls(requests=1)
        done = usage.get("completion_tokens_details") or {}
        prompt = usage.get("prompt_tokens_details") or {}
        cached = _int(prompt.get("cached_tokens") if isinstance(prompt, dict) else 0)
        return cls(
            requests=1,
            prompt=_int(usage.get("prompt_tokens")),
            completion=_int(usage.get("completion_tokens")),
            reasoning=_int(done.get("reasoning_tokens") if isinstance(done, dict) else 0),
            cached=cached or _int(usage.get("prompt_cache_hit_tokens")),
        )

    def add(self, other: Usage) -> None:
        """Accumulate another request's usage."""
        self.requests += other.requests
        self.prompt += other.prompt
        self.completion += other.completion
        self.reasoning += other.reasoning
        self.cached += other.cached


def cost_of(usage: Usage, price: PriceConfig | None) -> float:
    """Money for `usage` at `price` per million tokens (0 without a price)."""
    if price is None:
        return 0.0
    cached_rate = price.input if price.cached_input is None else price.cached_input
    fresh = max(0, usage.prompt - usage.cached)
    total = fresh * price.input + usage.cached * cached_rate + usage.completion * price.output
    return total / 1_000_000


@dataclass(frozen=True)
class UsageTotals:
    """Sums over a chat or a day."""

    requests: int
    prompt: int
    completion: int
    reasoning: int
    cached: int
    cost: float
    currency: str

    def line(self) -> str:
        """One human line, e.g. for /status."""
        money = f", {self.cost:.4f} {self.currency}" if self.cost else ""
        return (
            f"{self.requests} requests, {self.prompt} prompt tokens ({self.cached} cached), "
            f"{self.completion} completion ({self.reasoning} reasoning){money}"
        )


def today() -> str:
    """Today's date in UTC, as stored."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


class UsageStore:
    """One row per turn in `llm_usage`, on the shared Database."""

    def __init__(self, db: Database, prices: dict[str, PriceConfig] | None = None) -> None:
        self.db = db
        self.prices = prices or {}

    async def init(self) -> None:
        """Create the table if needed."""
        await self.db.create(llm_usage)

    async def record(self, session_id: str, model: str, usage: Usage) -> None:
        """Write one turn's usage (no row for a turn that made no request)."""
        if not usage.requests:
            return
        price = self.prices.get(model)
        row = {
            "session_id": session_id,
            "day": today(),
            "created_at": time.time(),
            "model": model,
            "requests": usage.requests,
            "prompt": usage.prompt,
            "completion": usage.completion,
            "reasoning": usage.reasoning,
            "cached": usage.cached,
            "cost": cost_of(usage, price),
            "currency": price.currency if price else "",
        }
        async with self.db.engine.begin() as conn:
            await conn.execute(llm_usage.insert(), [row])

    async def totals(self, *, session_id: str | None = None, day: str | None = None) -> UsageTotals:
        """Sums for one session and/or one day (both None: everything)."""
        c = llm_usage.c
        query = sa.select(
            sa.func.coalesce(sa.func.sum(c.requests), 0),
            sa.func.coalesce(sa.func.sum(c.prompt), 0),
            sa.func.coalesce(sa.func.sum(c.completion), 0),
            sa.func.coalesce(sa.func.sum(c.reasoning), 0),
            sa.func.coalesce(sa.func.sum(c.cached), 0),
            sa.func.coalesce(sa.func.sum(c.cost), 0.0),
            sa.func.max(c.currency),
        )
        if session_id is not None:
            query = query.where(c.session_id == session_id)
        if day is not None:
            query = query.where(c.day == day)
        async with self.db.read() as conn:
            row = (await conn.execute(query)).one()
        requests, prompt, completion, reasoning, cached = (int(v) for v in row[:5])
        return UsageTotals(
            requests, prompt, completion, reasoning, cached, float(row[5]), row[6] or ""
        )
