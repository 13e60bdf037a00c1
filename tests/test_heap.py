"""`freeze_startup_heap`: what start-up built is out of the collector's reach afterwards."""

from __future__ import annotations

import gc

from larkbot.heap import freeze_startup_heap


def test_freeze_moves_the_live_heap_out_of_the_collected_generations() -> None:
    before = len(gc.get_objects())
    try:
        frozen = freeze_startup_heap()
        assert frozen >= before // 2  # the imported modules and classes, at least
        assert len(gc.get_objects()) < before // 10  # what a full collection still walks
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
