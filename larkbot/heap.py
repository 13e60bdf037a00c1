"""The garbage collector in a long-running server: freeze what start-up built.

CPython's full (generation 2) collection walks every tracked object and holds the GIL, so the
event loop, while it does. After `serve` has imported its dependencies that is ~470,000 objects
and one full collection takes ~350 ms on the 2-core reference machine; it comes rarely but at
any moment (bench/bench_scheduler.py saw 46 and 65 ms loop lags from it). Nearly all of those
objects live as long as the process (modules, classes, compiled schemas), so `gc.freeze()`
moves them to a permanent generation that collections skip: a later full collection walks only
what the running server allocated since.

The youngest generation is collected after 700 net allocations by default. A burst of webhook
events keeps a few dozen objects per event alive while its claim commits, so at 700 the burst
ran a collection every few events, each walking all of them and promoting them: 12 µs per event,
a twentieth of its cost (290 collections for 4,000 events). Collected every `YOUNG_THRESHOLD`
allocations instead (CPython 3.13 itself moved to 2,000), the same burst needs a few.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # net allocations between collections of the youngest generation


def freeze_startup_heap() -> int:
    """Collect once (so no garbage is frozen), then freeze every survivor; returns how many."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def widen_young_generation(threshold: int = YOUNG_THRESHOLD) -> tuple[int, int, int]:
    """Collect the youngest generation every `threshold` allocations; returns the old settings."""
    old = gc.get_threshold()
    gc.set_threshold(threshold, *old[1:])
    return old
