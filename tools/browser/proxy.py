"""An egress proxy inside the process: Chromium reaches the network only through it.

Chromium is started with `--proxy-server` pointing here (and Playwright's `<-loopback>` bypass
rule, so loopback goes through the proxy too). Every request a page makes — the top document,
redirect hops, sub-resources, fetch/XHR, WebSockets (tunnelled with CONNECT) — arrives as an
absolute-form HTTP request or a CONNECT. The host is checked with web_fetch's SSRF policy
(`tools.web.ssrf.allowed_addresses`) and the proxy then dials the checked address itself, so a
DNS answer cannot change between check and connect. A refused request gets a 403 naming why.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from larkbot.logs import get_logger
from tools.web.ssrf import BlockedAddress, Resolver, allowed_addresses, system_resolver

log = get_logger(__name__)

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Connector = Callable[[str, int], Awaitable[Streams]]

HEAD_LIMIT = 64 * 1024  # request and response heads; a longer one is refused
HEAD_TIMEOUT = 15.0
CONNECT_TIMEOUT = 10.0
IDLE_TIMEOUT = 120.0  # a tunnel or response with no bytes either way for this long is closed
_HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


async def open_tcp(address: str, port: int) -> Streams:
    """Connect to a checked address (the default connector)."""
    return await asyncio.open_connection(address, port, limit=HEAD_LIMIT)


class EgressProxy:
    """HTTP + CONNECT proxy on 127.0.0.1 for one browser context, with the SSRF guard.

    `allow_private` is read per connection (set from the caller's rights at each tool call);
    `deny_all`
    refuses everything (the browser-wide proxy for traffic outside any context). `blocked`
    keeps the latest refusals so the tools can tell the model what a page was denied.
    """

    def __init__(
        self,
        resolver: Resolver = system_resolver,
        connector: Connector = open_tcp,
        deny_all: bool = False,
    ) -> None:
        self.allow_private = False
        self._resolver = resolver
        self._connector = connector
        self._deny_all = deny_all
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.blocked: deque[str] = deque(maxlen=20)
        self.url = ""

    async def start(self) -> str:
        """Listen on an ephemeral loopback port; return the proxy URL for Chromium."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=HEAD_LIMIT)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def close(self) -> None:
        """Stop listening and cut every open connection."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def take_blocked(self) -> list[str]:
        """The refusals since the last call (and forget them)."""
        items = list(self.blocked)
        self.blocked.clear()
        return items

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass  # the browser or the server hung up; nothing to report
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _dial(self, host: str, port: int) -> Streams:
        """Check host:port against the policy, then connect to a checked address."""
        if self._deny_all:
            raise BlockedAddress("traffic outside a browser session is not allowed")
        addresses = await allowed_addresses(host, port, self._resolver, self.allow_private)
        error: Exception = OSError(f"cannot connect to {host}:{port}")
        for address in addresses:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    return await self._connector(address, port)
            except (OSError, TimeoutError) as err:
                error = err
        raise error

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(HEAD_TIMEOUT):
            head = await reader.readuntil(b"\r\n\r\n")
        line, _, rest = head.partition(b"\r\n")
        parts = line.decode("latin-1").split(" ")
        if len(parts) != 3:
            await _answer(writer, 400, "malformed request line")
            return
        method, target, _version = parts
        try:
            if method == "CONNECT":
                host, port = _split_authority(target, 443)
                upstream = await self._dial(host, port)
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await _splice(reader, writer, *upstream)
                return
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                await _answer(writer, 400, f"only http:// requests are proxied, not {target[:80]}")
                return
            host, port = url.hostname, url.port or 80
            upstream = await self._dial(host, port)
        except BlockedAddress as err:
            self.blocked.append(f"{target[:200]} ({err})")
            log.info("browser_request_blocked", target=target.split("?", 1)[0][:200])
            await _answer(writer, 403, f"blocked by larkbot's browser guard: {err}")
            return
        except (OSError, TimeoutError) as err:
            await _answer(writer, 502, f"cannot reach {target[:200]}: {err}")
            return
        path = url.path or "/"
        origin_form = f"{method} {path}{'?' + url.query if url.query else ''} HTTP/1.1"
        upstream[1].write(origin_form.encode("latin-1") + b"\r\n" + _close_headers(rest))
        await _relay_response(reader, writer, *upstream)


def _split_authority(target: str, default_port: int) -> tuple[str, int]:
    """host and port of `host:port` or `[v6]:port`."""
    parsed = urlsplit(f"//{target}")
    if not parsed.hostname:
        raise BlockedAddress(f"no host in {target[:80]!r}")
    try:
        return parsed.hostname, parsed.port or default_port
    except ValueError as err:
        raise BlockedAddress(f"bad port in {target[:80]!r}") from err


def _close_headers(block: bytes) -> bytes:
    """Headers without hop-by-hop ones, plus `Connection: close` (one request per connection).

    A WebSocket upgrade keeps `Connection: Upgrade`; the tunnel then carries only that socket.
    """
    lines = [ln for ln in block.split(b"\r\n") if ln]
    upgrade = any(ln.lower().startswith(b"upgrade:") for ln in lines)
    kept = [ln for ln in lines if ln.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
    kept.append(b"Connection: Upgrade" if upgrade else b"Connection: close")
    return b"\r\n".join(kept) + b"\r\n\r\n"


async def _relay_response(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    up_r: asyncio.StreamReader,
    up_w: asyncio.StreamWriter,
) -> None:
    """Send the request body up and the response down; the response says `Connection: close`,
    so the browser never sends a second request (for maybe another host) on this connection."""
    pump_up = asyncio.create_task(_copy(client_r, up_w))
    try:
        async with asyncio.timeout(IDLE_TIMEOUT):
            head = await up_r.readuntil(b"\r\n\r\n")
        status, _, rest = head.partition(b"\r\n")
        client_w.write(status + b"\r\n" + _close_headers(rest))
        await _copy(up_r, client_w)
    finally:
        pump_up.cancel()
        up_w.close()


async def _splice(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    up_r: asyncio.StreamReader,
    up_w: asyncio.StreamWriter,
) -> None:
    """Copy bytes both ways until either side closes."""
    tasks = [asyncio.create_task(_copy(client_r, up_w)), asyncio.create_task(_copy(up_r, client_w))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        up_w.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, TimeoutError):
        while True:
            async with asyncio.timeout(IDLE_TIMEOUT):
                chunk = await reader.read(65536)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
    with contextlib.suppress(OSError):
        if writer.can_write_eof():
            writer.write_eof()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = text.encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()
