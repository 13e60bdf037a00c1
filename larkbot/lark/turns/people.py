"""Who said what: display names of Lark users, looked up once and cached.

`GET /open-apis/contact/v3/users/:open_id?user_id_type=open_id` (scope
`contact:user.base:readonly`). Without the scope, or for someone outside the app's contact
range, the name is a short stable label from the open_id (`user-3f9a2c`), so people stay
distinguishable; a missing scope is remembered for a while instead of asked on every message.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, Protocol

from larkbot.lark.api.errors import LarkAPIError
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.turns.people")
NAME_TTL = 6 * 3600.0
FAILED_TTL = 600.0  # a refused lookup is retried after this
MAX_CACHED = 5000
LOOKUP_TIMEOUT = 3.0
NO_SCOPE = frozenset({99991672, 99991676, 99991679})


class _Users(Protocol):
    async def get_user(self, open_id: str) -> dict[str, Any]: ...


def fallback_label(open_id: str) -> str:
    """A short, stable, distinguishable label for someone whose name is unknown."""
    tail = open_id.removeprefix("ou_")[-6:] or "unknown"
    return f"user-{tail}"


class Directory:
    """open_id → display name, with a bounded TTL cache and a fallback label."""

    def __init__(self, users: _Users | None) -> None:
        self.users = users
        self._cache: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._no_scope_until = 0.0
        # lookups in flight: a burst of one person's messages asks Lark once, not per message
        self._asking: dict[str, asyncio.Future[str]] = {}

    def remember(self, open_id: str, name: str) -> None:
        """Seed a name we already know (e.g. from a message's mentions)."""
        if open_id and name:
            self._put(open_id, name, NAME_TTL)

    def _put(self, open_id: str, name: str, ttl: float) -> None:
        self._cache[open_id] = (name, time.monotonic() + ttl)
        self._cache.move_to_end(open_id)
        while len(self._cache) > MAX_CACHED:
            self._cache.popitem(last=False)

    async def name(self, open_id: str) -> str:
        """The person's display name, or their fallback label; never raises."""
        cached = self._cache.get(open_id)
        if cached and cached[1] > time.monotonic():
            return cached[0]
        label = fallback_label(open_id)
        if self.users is None or not open_id or time.monotonic() < self._no_scope_until:
            return label
        asking = self._asking.get(open_id)
        if asking is None:
            asking = self._asking[open_id] = asyncio.create_task(
                self._look_up(self.users, open_id, label), name="lark-contact-lookup"
            )
            asking.add_done_callback(lambda _: self._asking.pop(open_id, None))
        return await asyncio.shield(asking)  # one waiter cancelled does not cancel the rest

    async def _look_up(self, users: _Users, open_id: str, label: str) -> str:
        """Ask Lark for the name and cache the answer (a refusal caches the label)."""
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT):
                user = await users.get_user(open_id)
        except asyncio.CancelledError:
            raise
        except LarkAPIError as err:
            if err.code in NO_SCOPE:
                self._no_scope_until = time.monotonic() + FAILED_TTL
                log.warning(
                    "lark_contact_scope_missing",
                    hint="add contact:user.base:readonly so the bot knows people's names",
                )
            self._put(open_id, label, FAILED_TTL)
            return label
        except Exception as err:
            log.info("lark_contact_lookup_failed", error=type(err).__name__)
            return label
        name = str(user.get("name") or user.get("en_name") or "").strip() or label
        self._put(open_id, name, NAME_TTL)
        return name
