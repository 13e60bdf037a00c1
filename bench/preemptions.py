"""How often the event loop was preempted in each burst; the bursts' ratios with and without.

Linux only (`getrusage(RUSAGE_THREAD)`, the calling thread's involuntary context switches).

On a 2-core machine the kernel wakes a local PostgreSQL backend on the CPU of the task that wrote
to its socket (a socket wake-up is "sync": the writer is expected to sleep). The event loop never
sleeps in a burst, so a backend woken there preempts it at every commit while the other core
idles, and stays: the next wake-up finds it on that CPU again. Nothing else runs in a burst (the
turns wait for it to end), so the loop's involuntary switches count those wake-ups. Printed with
the figures, so a run says how many of its bursts paid for it and what the others measured.
"""

from __future__ import annotations

import resource
import statistics

# A burst commits its 100 claims in about 13 groups; a backend on the loop's CPU preempts it at
# nearly every one (11-14 seen), one on the other CPU at none or one or two.
SHARED_AT = 3


class Preemptions:
    """The loop thread's involuntary context switches per burst.

    Call `start` and `stop` from the loop's own thread, around each burst.
    """

    def __init__(self) -> None:
        self.bursts: list[int] = []
        self._before = 0

    def start(self) -> None:
        """A burst begins."""
        self._before = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw

    def stop(self) -> None:
        """The burst ended."""
        self.bursts.append(resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw - self._before)

    def summary(self, ratios: list[float]) -> str:
        """One line: how many bursts had the loop preempted, and each kind's median ratio."""
        parts = []
        for label, shared in ((f"{SHARED_AT} or more times", True), ("less often", False)):
            picked = [
                r for r, n in zip(ratios, self.bursts, strict=True) if (n >= SHARED_AT) == shared
            ]
            if picked:
                parts.append(f"{label} in {len(picked)}: median {statistics.median(picked):.2f}x")
        return "the event loop was preempted " + "; ".join(parts)
