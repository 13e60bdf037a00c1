"""The soak at a small size: three real `larkbot serve` replicas on one PostgreSQL and Redis.

100 messages (5 sent 4x at once to different replicas), a replica kill -9-ed mid-turn and
restarted, Redis restarted, two scheduled jobs ticking: every message answered exactly once,
every tick fired once, two approvals clicked on another replica than the one that asked.
`make soak` runs the full size (2,000 messages) and prints the figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import soak
from bench.soak_plan import SoakPlan

pytestmark = pytest.mark.postgres

SMALL = SoakPlan(
    events=100,
    redelivered=5,
    chats=10,
    rate=25.0,
    jobs=2,
    tick_pause=2.0,
    victim="follower",  # the leader's 30 s scheduler lease is `make soak`'s to wait out
    approvals=2,
    settle_seconds=60.0,
)


@pytest.mark.timeout(240)  # bounded; ~30 s on 2 cores, more when the suite shares them
async def test_soak_small(tmp_path: Path) -> None:
    result = await soak(SMALL, tmp_path)
    print(result.table())
    assert result.failures == []
    assert result.counts["answered once"] == SMALL.events
    assert result.counts["ticks"] >= SMALL.jobs
    assert result.counts["  clicked on another replica"] == SMALL.approvals
