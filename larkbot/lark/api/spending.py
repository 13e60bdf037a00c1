"""The spending plan: how an answer is shown, given what is left of the month's Lark API budget.

A streamed answer costs 3 calls plus one per live update (create the card, reply with it,
updates, one final update); a plain answer costs 1. So:

- plenty left (spending at or under an even pace through the month): a live card with one
  update every STREAM_INTERVAL seconds — CardKit's typewriter effect types the new text out
  between updates, so a ~10 s answer costs 4 calls;
- ahead of pace: the same card, updated more rarely (the interval grows as the month's
  remaining share of the budget shrinks relative to the month's remaining time);
- under TIGHT of the budget left: no live card; the final answer as one card (1 call);
- under NEARLY_EXHAUSTED left: plain replies only (1 call, no card JSON).

`lark.monthly_call_budget: 0` means no budget: live cards at `lark.stream_updates_per_second`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from larkbot.lark.api.budget import month_left

STREAM_INTERVAL = 5.0  # seconds between live updates when the budget is plentiful
MAX_INTERVAL = 20.0  # slower than this and a live card is not worth its calls
TIGHT = 0.20
NEARLY_EXHAUSTED = 0.05

Mode = Literal["stream", "card", "plain"]


@dataclass(frozen=True)
class Plan:
    """How to show one answer: `mode`, and for "stream" the seconds between live updates."""

    mode: Mode
    interval: float = 0.0  # 0: the configured stream_updates_per_second


def plan_for(used: int, budget: int, now: float | None = None) -> Plan:
    """The plan for an answer starting now, with `used` of `budget` calls spent this month."""
    if budget <= 0:
        return Plan("stream")
    left = 1.0 - used / budget
    if left <= NEARLY_EXHAUSTED:
        return Plan("plain")
    if left <= TIGHT:
        return Plan("card")
    pace = left / max(month_left(now), 1e-3)  # >= 1: at or under an even pace
    interval = STREAM_INTERVAL / min(1.0, pace)
    return Plan("card") if interval > MAX_INTERVAL else Plan("stream", interval)
