"""An MCP transport whose read stream reports its end: the server exited or hung up.

Without it a crashed stdio server is noticed only by the next ping (up to 30 s later) or by the
next call failing; with it the supervisor starts reconnecting at once, and calls made meanwhile
wait for the new connection instead of being sent into a dead pipe.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any

import anyio

ENDED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


class WatchedRead:
    """A read stream that calls `on_end` once the transport stops delivering messages."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self.inner = inner
        self.on_end = on_end

    async def receive(self) -> Any:
        """The next message; on the stream's end, report it, then end as the stream did."""
        try:
            return await self.inner.receive()
        except ENDED:
            self.on_end()
            raise

    async def aclose(self) -> None:
        """Close the underlying stream."""
        await self.inner.aclose()

    def __aiter__(self) -> WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WatchedRead:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        result: bool | None = await self.inner.__aexit__(kind, err, tb)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # `last_context` of the SDK's context-aware streams


@contextlib.asynccontextmanager
async def watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """`transport` (an MCP SDK Transport) with its read stream watched for its end."""
    async with transport as (read, write):
        yield WatchedRead(read, on_end), write
