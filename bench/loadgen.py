"""A lean HTTP/1.1 load generator: pre-built requests over persistent keep-alive connections.

Like wrk or ab, it spends as little as it can per request, so a server benchmark measures the
server: aiohttp's client cost about 100 µs of this process's CPU per request, about half of what
the servers under test spend, which pulled every ratio between two servers towards 1.0. Requests
are built (sealed, signed, framed) before the clock starts; each connection is an
`asyncio.Protocol` that sends its next request from the callback that saw the previous response
end (no task, no stream reader per request).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from urllib.parse import urlsplit

_HEAD_END = b"\r\n\r\n"
_LENGTH = b"\r\ncontent-length:"


def build_post(url: str, body: bytes, headers: dict[str, str]) -> bytes:
    """The bytes of one HTTP/1.1 POST of `body` to `url` (Content-Length framed)."""
    parts = urlsplit(url)
    lines = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class BadResponse(Exception):
    """A response that is not `200` with a Content-Length body, or a connection that closed."""


class _Run:
    """One batch of requests shared by the connections: whoever is free sends the next."""

    def __init__(self, requests: list[bytes], total: int | None = None) -> None:
        # (when it was due, or None: now; the request)
        self.pending: deque[tuple[float | None, bytes]] = deque((None, r) for r in requests)
        # connections with nothing to send yet (paced runs), the longest idle first: each takes
        # its turn, so none sits past the server's header deadline without a request
        self.idle: deque[_Connection] = deque()
        self.left = len(requests) if total is None else total
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.latencies: list[float] = []  # each response's, in the order they ended

    def add(self, request: bytes, due: float) -> None:
        """A paced request, due at `due` (its latency counts from then, not from its send)."""
        self.pending.append((due, request))
        if self.idle:
            self.idle.popleft()._send_next()

    def fail(self, err: Exception) -> None:
        """Stop the run with `err`."""
        if not self.done.done():
            self.done.set_exception(err)

    def answered(self) -> None:
        """One response ended."""
        self.left -= 1
        if not self.left and not self.done.done():
            self.done.set_result(None)


class _Connection(asyncio.Protocol):
    """One keep-alive connection: a request out, its whole response in, the next request out."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.run: _Run | None = None
        self.sent_at = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        """A closed connection fails the run it was part of."""
        if self.run is not None:
            self.run.fail(BadResponse(f"connection closed: {exc}"))

    def start(self, run: _Run) -> None:
        """Join `run`: send its next request, if any is left."""
        self.run = run
        self._send_next()

    def _send_next(self) -> None:
        assert self.run is not None and self.transport is not None
        if not self.run.pending:
            self.run.idle.append(self)
            return
        due, request = self.run.pending.popleft()
        self.sent_at = time.perf_counter() if due is None else due
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        """Parse as much of the response as arrived; at its end, send the next request."""
        self.buffer += data
        end = self.buffer.find(_HEAD_END)
        if end < 0 or self.run is None:
            return
        run = self.run
        head = bytes(self.buffer[:end]).lower()
        at = head.find(_LENGTH)
        if not head.startswith((b"http/1.1 200 ", b"http/1.0 200 ")) or at < 0:
            run.fail(BadResponse(head.split(b"\r\n", 1)[0].decode("latin-1")))
            return
        start = at + len(_LENGTH)
        stop = head.find(b"\r\n", start)
        length = int(head[start : stop if stop >= 0 else len(head)])
        if len(self.buffer) < end + 4 + length:
            return  # the body's rest is still on its way
        del self.buffer[: end + 4 + length]
        run.latencies.append(time.perf_counter() - self.sent_at)
        run.answered()
        self._send_next()


class LoadGenerator:
    """`connections` persistent connections to one server, opened once, reused for every run."""

    def __init__(self, url: str, connections: int) -> None:
        self.url = url
        self.size = connections
        self._connections: list[_Connection] = []

    async def __aenter__(self) -> LoadGenerator:
        parts = urlsplit(self.url)
        loop = asyncio.get_running_loop()
        for _ in range(self.size):
            _, conn = await loop.create_connection(_Connection, parts.hostname, parts.port)
            self._connections.append(conn)
        return self

    async def __aexit__(self, *_: object) -> None:
        for conn in self._connections:
            conn.run = None
            if conn.transport is not None:
                conn.transport.close()
        self._connections.clear()

    async def burst(self, requests: list[bytes], within: float = 60.0) -> float:
        """Send every request, all connections busy at once; seconds from first send to last 200."""
        run = _Run(requests)
        started = time.perf_counter()
        await self._go(run, self._connections, within)
        return time.perf_counter() - started

    async def one_by_one(self, requests: list[bytes], within: float = 60.0) -> list[float]:
        """Each request alone on one connection: the seconds each took to its 200."""
        run = _Run(requests)
        await self._go(run, self._connections[:1], within)
        return run.latencies

    async def paced(self, requests: list[bytes], rate: float, within: float = 60.0) -> list[float]:
        """One request every 1/`rate` s on a free connection: the seconds each took to its 200,
        counted from when it was due (a request that waited for a connection counts that)."""
        run = _Run([], len(requests))
        self._start(run, self._connections)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(within):
                for i, request in enumerate(requests):
                    due = started + i / rate
                    if (wait := due - time.perf_counter()) > 0:
                        await asyncio.sleep(wait)
                    run.add(request, due)
                await run.done
        finally:
            self._stop(self._connections)
        return run.latencies

    async def _go(self, run: _Run, connections: list[_Connection], within: float) -> None:
        if not run.left:
            return
        self._start(run, connections)
        try:
            async with asyncio.timeout(within):
                await run.done
        finally:
            self._stop(connections)

    @staticmethod
    def _start(run: _Run, connections: list[_Connection]) -> None:
        for conn in connections:
            if conn.transport is None or conn.transport.is_closing():  # hung up between runs
                raise BadResponse("connection closed before the run")
            conn.start(run)

    @staticmethod
    def _stop(connections: list[_Connection]) -> None:
        for conn in connections:
            conn.run = None
