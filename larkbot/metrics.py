"""Every Prometheus metric larkbot exports (`GET /metrics`), in one registry, with small helpers.

Import the metric objects or helpers from here; never create metrics elsewhere, so names,
labels and bounded label values stay in one place. Labels take only bounded values (tool
names, interface names, Lark error codes, path templates), never ids or user text.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from larkbot.usage import Usage

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

TURNS = Counter(
    "larkbot_turns",
    "Agent turns finished, by interface (lark, cli, web, schedule) and outcome (ok, error, "
    "cancelled).",
    ["interface", "outcome"],
    registry=REGISTRY,
)
TURN_SECONDS = Histogram(
    "larkbot_turn_seconds",
    "Wall time of one agent turn, from the user's message to the final answer.",
    ["interface"],
    buckets=(0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)
TOOL_CALLS = Counter(
    "larkbot_tool_calls",
    "Tool calls, by tool and outcome (ok, error, timeout).",
    ["tool", "outcome"],
    registry=REGISTRY,
)
LARK_API_CALLS = Counter(
    "larkbot_lark_api_calls",
    "HTTP calls to the Lark Open Platform, by endpoint template and Lark code (0 = success; "
    "-1 = no answer; HTTP status when the body had no code).",
    ["endpoint", "code"],
    registry=REGISTRY,
)
LARK_MONTH_CALLS = Gauge(
    "larkbot_lark_api_calls_month",
    "Lark API calls this quota month by every replica (the shared ledger's running total).",
    registry=REGISTRY,
)
LARK_MONTH_BUDGET = Gauge(
    "larkbot_lark_api_budget",
    "lark.monthly_call_budget: Lark API calls allowed per month (0 = unlimited).",
    registry=REGISTRY,
)
LLM_REQUESTS = Counter(
    "larkbot_llm_requests",
    "Chat Completions requests that finished, by model and outcome (ok, error).",
    ["model", "outcome"],
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "larkbot_llm_tokens",
    "Tokens reported by the model's usage, by model and kind (prompt, completion; reasoning is "
    "part of completion, cached part of prompt).",
    ["model", "kind"],
    registry=REGISTRY,
)
FEEDBACK = Counter(
    "larkbot_feedback",
    "👍 / 👎 reactions people put on the bot's answers in Lark, by kind (up, down); each "
    "person's reaction on one answer counts once.",
    ["kind"],
    registry=REGISTRY,
)
for _kind in ("up", "down"):  # both series exist from the start, at 0
    FEEDBACK.labels(_kind)
JOURNAL_BACKLOG = Gauge(
    "larkbot_journal_backlog",
    "Inbound Lark messages claimed but not yet answered (refreshed at each scrape).",
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "larkbot_queue_depth",
    "Lark messages waiting in per-session queues of this replica (refreshed at each scrape).",
    registry=REGISTRY,
)


@dataclass
class LastResult:
    """The outcome of the latest model request (for `/readyz`); None before the first."""

    ok: bool | None = None
    at: float = 0.0
    error: str = ""

    def describe(self) -> str:
        """`ok 12 s ago` or `failed 3 s ago: …`."""
        ago = f"{time.time() - self.at:.0f} s ago"
        return f"ok {ago}" if self.ok else f"failed {ago}: {self.error}"


LLM_LAST = LastResult()

# /open-apis/im/v1/messages/om_abc/reply -> /open-apis/im/v1/messages/:id/reply
_ID_SEGMENT = re.compile(r"^(?!v\d+$)(?=.*\d)[\w.-]{6,}$|^(om|oc|ou|on|omt|img|file|cli)_\w+$")


MEMORY_RECALL_SECONDS = Histogram(
    "larkbot_memory_recall_seconds",
    "Time to recall a turn's long-term memories (one query, ranking, rendering).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
    registry=REGISTRY,
)
MEMORY_RECALL_TOKENS = Histogram(
    "larkbot_memory_recall_tokens",
    "Estimated prompt tokens the recalled memories (and the saving rules) add to a turn.",
    buckets=(0, 150, 300, 450, 600, 900, 1500, 3000),
    registry=REGISTRY,
)


def endpoint_template(path: str) -> str:
    """A Lark API path with ids replaced by `:id` (bounded label values)."""
    path = path.split("?", 1)[0]
    return "/".join(":id" if _ID_SEGMENT.match(seg) else seg for seg in path.split("/"))


def count_lark_call(path: str, code: int | str) -> None:
    """One HTTP attempt to the Lark Open Platform and the code it ended with."""
    LARK_API_CALLS.labels(endpoint_template(path), str(code)).inc()


def count_tool_call(tool: str, outcome: str) -> None:
    """One finished tool call."""
    TOOL_CALLS.labels(tool, outcome).inc()


def count_llm_request(
    model: str, ok: bool, usage: dict[str, object] | None = None, error: str = ""
) -> None:
    """One finished model request, with its token usage when the endpoint reported it."""
    LLM_REQUESTS.labels(model, "ok" if ok else "error").inc()
    LLM_LAST.ok, LLM_LAST.at, LLM_LAST.error = ok, time.time(), error[:200]
    if usage is None:
        return
    parsed = Usage.from_wire(usage)
    for kind in ("prompt", "completion", "reasoning", "cached"):
        tokens = getattr(parsed, kind)
        if tokens > 0:
            LLM_TOKENS.labels(model, kind).inc(tokens)


def count_feedback(kind: str) -> None:
    """One new 👍 (`up`) or 👎 (`down`) on an answer."""
    FEEDBACK.labels(kind).inc()


def observe_turn(interface: str, outcome: str, seconds: float) -> None:
    """One finished agent turn."""
    TURNS.labels(interface, outcome).inc()
    TURN_SECONDS.labels(interface).observe(seconds)


def render() -> tuple[bytes, str]:
    """The exposition text of every metric and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
