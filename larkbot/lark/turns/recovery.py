"""Journal claims that are not messages (document comments): how crash recovery hands them back."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Protocol


class Resumable(Protocol):
    """Journal claims of another kind (payload `{"kind": ...}`) that crash recovery hands back."""

    def running(self) -> Collection[str]:
        """Their keys being worked on here: never taken over."""
        ...

    async def resume(self, payload: str) -> bool:
        """This replica now holds the claim: work on it again; False when nothing was left."""
        ...


def kind_of(payload: str) -> str:
    """A journal payload's `kind` ("" for a message, whose payload has none)."""
    try:
        raw = json.loads(payload)
    except ValueError:
        return ""
    return str(raw.get("kind") or "") if isinstance(raw, dict) else ""
