"""What a soak run does (`SoakPlan`), what it saw (`SoakResult`), and the table it prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class SoakPlan:
    """The knobs of one soak; `make soak` runs the defaults, `make test` a small one."""

    events: int = 2000  # distinct messages
    redelivered: int = 100  # of them sent 4x at once, to different replicas
    chats: int = 40  # DMs from the owner; one session each
    rate: float = 10.0  # messages a second: below what 3 replicas on 2 shared cores sustain
    jobs: int = 3  # scheduled jobs created up front
    tick_pause: float = 3.0  # after a job's tick fired, the next tick is due this much later
    llm_delay: float = 0.2  # the fake model's answer time: turns overlap, a kill lands mid-turn
    kill_at: float = 0.3  # when this share of the messages is out, replica `victim` is kill -9-ed
    # the leader is `--kill-leader`: killed while a job run is in flight; another replica re-runs it
    victim: Literal["leader", "follower"] = "follower"  # which replica the kill -9 hits
    restart_after: float = 1.0  # seconds the killed replica stays down
    redis_at: float = 0.6  # when this share is out, Redis restarts
    redis_down: float = 1.0  # seconds Redis stays down
    approvals: int = 10  # approval round trips (ask on one replica, click on another); 0: off
    settle_seconds: float = 180.0  # bound on waiting for the last replies after the last send


@dataclass
class Series:
    """Latencies (seconds) of one kind of message."""

    label: str
    values: list[float] = field(default_factory=list)
    expected: int = 0

    def pct(self, q: float) -> float:
        """The q-quantile (nearest rank) in ms; nan when empty."""
        if not self.values:
            return float("nan")
        ordered = sorted(self.values)
        rank = max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))
        return ordered[rank] * 1000


@dataclass
class SoakResult:
    """Counts, latencies and the broken promises (empty `failures`: the soak passed)."""

    plan: SoakPlan
    series: list[Series] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0

    def table(self) -> str:
        """The figures as a small Markdown table plus one line of counts."""
        p = self.plan
        lines = [
            f"soak: 3 replicas, {p.events} messages ({p.redelivered} sent 4x at once), "
            f"{p.chats} chats, {p.jobs} scheduled jobs; one kill -9 mid-turn, one Redis restart; "
            f"{self.wall_seconds:.0f} s",
            "",
            "| what | seen / expected | p50 ms | p99 ms | max ms |",
            "| --- | --- | --- | --- | --- |",
        ]
        for s in self.series:
            seen = f"{len(s.values)} / {s.expected}"
            lines.append(
                f"| {s.label} | {seen} | {s.pct(0.5):.0f} | {s.pct(0.99):.0f} | {s.pct(1.0):.0f} |"
            )
        lines.append("")
        lines.append(", ".join(f"{k}: {v}" for k, v in self.counts.items()))
        lines.append("PASS" if not self.failures else "FAIL: " + "; ".join(self.failures))
        return "\n".join(lines)
