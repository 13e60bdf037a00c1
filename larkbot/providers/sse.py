"""Server-sent events: the `data:` payloads of a streamed response, one per event."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator


def _complete(data: str) -> bool:
    if data == "[DONE]":
        return True
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


async def sse_payloads(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Yield each event's data. Tolerates servers that omit the blank line between events."""
    buf: list[str] = []
    async for line in lines:
        line = line.rstrip("\r")
        if not line:
            if buf:
                yield "\n".join(buf)
                buf = []
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        field, _, value = line.partition(":")
        if field != "data":
            continue  # event:, id:, retry: carry nothing we need
        buf.append(value[1:] if value.startswith(" ") else value)
        joined = "\n".join(buf)
        if _complete(joined):
            yield joined
            buf = []
    if buf:
        yield "\n".join(buf)
