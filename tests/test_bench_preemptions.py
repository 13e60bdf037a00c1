"""bench/preemptions.py: bursts split by how often the loop was preempted, each kind's median."""

from __future__ import annotations

import os

from bench.preemptions import Preemptions


def test_bursts_are_split_at_three_preemptions_with_each_kinds_median_ratio() -> None:
    counts = Preemptions()
    counts.bursts = [0, 13, 1, 12, 2, 3]
    summary = counts.summary([1.10, 0.80, 1.00, 0.70, 1.20, 0.90])
    assert summary == (
        "the event loop was preempted 3 or more times in 3: median 0.80x; "
        "less often in 3: median 1.10x"
    )


def test_a_burst_counts_the_calling_threads_involuntary_switches() -> None:
    counts = Preemptions()
    counts.start()
    os.sched_yield()
    counts.stop()
    assert len(counts.bursts) == 1 and 0 <= counts.bursts[0] < 1000
    assert "in 1: median 1.00x" in counts.summary([1.0])
