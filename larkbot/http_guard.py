"""Edges of the HTTP server: a connection cap, a header deadline and a budget for unverified bodies.

aiohttp closes a keep-alive connection that sends no request for `keepalive_timeout`, but has no
deadline for a header that trickles in, no cap on open connections and no bound on how much
memory request bodies may take before their signature is checked. Each connection's protocol is
wrapped here: past `server.max_connections` (kept below half the open-file limit) the oldest
connection still sending its first header is dropped for the new one, else the new one is;
a connection without a whole request header after `server.header_timeout_seconds` is closed.
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Callable
from typing import Any

from aiohttp import web

from larkbot.logs import get_logger

log = get_logger("larkbot.http")


def connection_cap(configured: int) -> int:
    """`configured`, but at most half the process's open-file limit (the rest: DB, tools…)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, soft // 2))


class _Guarded(asyncio.Protocol):
    """One connection: forwards to aiohttp's handler, enforcing the header deadline."""

    def __init__(self, guard: ConnectionGuard, inner: Any) -> None:
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.awaiting_header = True
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Admit (or refuse) the connection and start its header deadline."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.guard.admit(self):
            transport.abort()
            return
        self._deadline = asyncio.get_running_loop().call_later(
            self.guard.header_timeout, self._header_late
        )
        self.inner.connection_made(transport)

    def _header_late(self) -> None:
        if self.awaiting_header and self.transport is not None:
            log.info("http_header_timeout", seconds=self.guard.header_timeout)
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        """Forward; the first parsed request header lifts the deadline."""
        self.inner.data_received(data)
        # aiohttp counts requests whose header it parsed; a private name, so a missing one
        # counts as "parsed" (the deadline then never cuts a working connection)
        if self.awaiting_header and getattr(self.inner, "_request_count", 1) > 0:
            self.awaiting_header = False
            if self._deadline is not None:
                self._deadline.cancel()

    def eof_received(self) -> bool | None:
        """Forward."""
        return bool(self.inner.eof_received())

    def pause_writing(self) -> None:
        """Forward (flow control)."""
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        """Forward (flow control)."""
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection; aiohttp hears of it unless it was refused at once."""
        if self._deadline is not None:
            self._deadline.cancel()
        if self.guard.release(self):
            self.inner.connection_lost(exc)


class ConnectionGuard:
    """The protocol factory handed to `create_server`: aiohttp's, wrapped by `_Guarded`."""

    def __init__(self, factory: Callable[[], Any], cap: int, header_timeout: float) -> None:
        self.factory = factory
        self.cap = cap
        self.header_timeout = header_timeout
        self.open: dict[_Guarded, None] = {}  # insertion-ordered: the oldest first
        self.refused = 0

    def __call__(self) -> _Guarded:
        """A new connection's protocol."""
        return _Guarded(self, self.factory())

    def admit(self, conn: _Guarded) -> bool:
        """Make room for `conn` (dropping the oldest still sending its header) or refuse it."""
        if len(self.open) >= self.cap:
            slow = next((c for c in self.open if c.awaiting_header), None)
            if slow is None:
                self.refused += 1
                log.warning("http_connection_refused", open=len(self.open), cap=self.cap)
                return False
            del self.open[slow]  # its handler still hears connection_lost from the abort
            self.open[conn] = None
            assert slow.transport is not None
            slow.transport.abort()
            return True
        self.open[conn] = None
        return True

    def release(self, conn: _Guarded) -> bool:
        """Forget a closed connection; False when it was refused before aiohttp saw it."""
        self.open.pop(conn, None)
        return conn._deadline is not None


class GuardedSite(web.TCPSite):
    """A TCPSite whose connections pass through a `ConnectionGuard`."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, guard_args: dict[str, Any]):
        super().__init__(runner, host, port, backlog=512)
        self.guard_args = guard_args
        self.guard: ConnectionGuard | None = None

    async def start(self) -> None:
        """Like TCPSite.start, with aiohttp's protocol factory wrapped."""
        await web.BaseSite.start(self)
        assert self._runner.server is not None
        self.guard = ConnectionGuard(self._runner.server, **self.guard_args)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self.guard, self._host, self._port, backlog=512)
        sockets = self._server.sockets
        self._bound_port = sockets[0].getsockname()[1] if sockets else self._port


class BodyBudget:
    """Bytes of request bodies held before verification, across all requests at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> bool:
        """Reserve `n` bytes; False (nothing reserved) when that would pass the limit."""
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        """Return bytes reserved by `take`."""
        self.used -= n
