"""Display names: a burst of one person's messages asks Lark once; a cancelled asker is alone."""

from __future__ import annotations

import asyncio
from typing import Any

from larkbot.lark.turns.people import Directory


class SlowUsers:
    """Answers `get_user` once released, counting the lookups."""

    def __init__(self) -> None:
        self.lookups = 0
        self.release = asyncio.Event()

    async def get_user(self, open_id: str) -> dict[str, Any]:
        self.lookups += 1
        await self.release.wait()
        return {"name": f"name of {open_id}"}


async def test_concurrent_asks_for_one_person_share_one_lookup() -> None:
    users = SlowUsers()
    directory = Directory(users)
    asks = [asyncio.create_task(directory.name("ou_alice")) for _ in range(20)]
    other = asyncio.create_task(directory.name("ou_bob"))
    await asyncio.sleep(0)
    users.release.set()
    names = await asyncio.wait_for(asyncio.gather(*asks, other), 30)
    assert names == ["name of ou_alice"] * 20 + ["name of ou_bob"]
    assert users.lookups == 2  # one per person, however many asked at once
    assert await directory.name("ou_alice") == "name of ou_alice" and users.lookups == 2


async def test_one_cancelled_asker_leaves_the_lookup_to_the_others() -> None:
    users = SlowUsers()
    directory = Directory(users)
    first = asyncio.create_task(directory.name("ou_alice"))
    second = asyncio.create_task(directory.name("ou_alice"))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    users.release.set()
    assert await asyncio.wait_for(second, 30) == "name of ou_alice"
    assert first.cancelled() and users.lookups == 1
