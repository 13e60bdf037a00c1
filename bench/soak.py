"""`make soak`: three `larkbot serve` replicas on one PostgreSQL and Redis, 2,000 events.

Run by `make soak` (which starts a throwaway PostgreSQL and passes LARKBOT_TEST_PG_URL):
    python -m bench.soak [events] [--kill-leader]
Prints the counts and latencies as a table; exits 1 when a promise was broken (a message lost
or answered twice, a scheduled tick missed or doubled, an event never acknowledged).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import shutil
import sys
import tempfile
from pathlib import Path

from bench.soak_plan import SoakPlan, SoakResult
from bench.soak_run import Soak
from larkbot.logs import configure_logging


async def soak(plan: SoakPlan, root: Path) -> SoakResult:
    """One soak on a fresh database of the server named by LARKBOT_TEST_PG_URL."""
    from tests.pg import fresh_database

    async with fresh_database() as pg_url:
        return await Soak(plan, pg_url, root).run()


def main(argv: list[str] | None = None) -> int:
    """Run the full-size soak (or `events` messages) and print the table."""
    args = sys.argv[1:] if argv is None else argv
    configure_logging("warning", "json")
    # a replica killed mid-answer leaves the fake model writing to a closed socket: expected
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    plan = SoakPlan()
    if "--kill-leader" in args:  # a job run in flight on the leader: re-run elsewhere, once
        plan = dataclasses.replace(plan, victim="leader")
    sizes = [a for a in args if a.isdigit()]
    if sizes:
        events = int(sizes[0])
        plan = dataclasses.replace(plan, events=events, redelivered=max(1, events // 20))
    root = Path(tempfile.mkdtemp(prefix="larkbot-soak-"))
    result = asyncio.run(soak(plan, root))
    print(result.table(), flush=True)
    if result.failures:
        print(f"the replicas' logs are kept in {root}", flush=True)
        return 1
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
