"""`freeze_startup_heap`: what start-up built is out of the collector's reach afterwards."""

from __future__ import annotations

import gc

from larkbot.heap import YOUNG_THRESHOLD, freeze_startup_heap, widen_young_generation


def test_freeze_moves_the_live_heap_out_of_the_collected_generations() -> None:
    before = len(gc.get_objects())
    try:
        frozen = freeze_startup_heap()
        assert frozen >= before // 2  # the imported modules and classes, at least
        assert len(gc.get_objects()) < before // 10  # what a full collection still walks
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0


def test_the_youngest_generation_is_collected_less_often_once_widened() -> None:
    old = widen_young_generation()
    try:
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *old[1:])
        assert old[0] < YOUNG_THRESHOLD
        gc.collect(0)  # start from an empty youngest generation
        before = gc.get_stats()[0]["collections"]
        keep = [[] for _ in range(old[0] * 3)]  # three default thresholds' worth of containers
        assert gc.get_stats()[0]["collections"] == before
        del keep
    finally:
        gc.set_threshold(*old)
