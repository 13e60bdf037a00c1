"""An httpx transport whose connections go only to addresses the SSRF policy has checked.

The host is resolved once, at connect time, by the same code that checks it, and the socket is
opened to that checked address: a DNS answer cannot change between the check and the connect
(DNS rebinding). TLS still verifies the certificate against the URL's host name, because the
pool keys connections by that name. Keep-alive is off, so every request resolves and checks
again and no connection outlives a change of `allow_private_networks`.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import AsyncIterator, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from tools.web.ssrf import Resolver, allowed_addresses, system_resolver

# Set by the fetcher around each fetch; the safe default is "public addresses only".
allow_private_var: ContextVar[bool] = ContextVar("web_fetch_allow_private", default=False)

# Most specific first: the first isinstance match wins.
_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
}


@contextlib.contextmanager
def _mapped() -> Iterator[None]:
    """Re-raise httpcore errors as the httpx errors callers expect."""
    try:
        yield
    except Exception as err:
        for source, target in _ERRORS.items():
            if isinstance(err, source):
                raise target(str(err)) from err
        raise


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves and checks the host, then connects to a checked address (never re-resolves)."""

    def __init__(self, resolver: Resolver = system_resolver) -> None:
        self._resolver = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to the first reachable address of host that the policy allows."""
        try:
            addresses = await allowed_addresses(host, port, self._resolver, allow_private_var.get())
        except OSError as err:
            raise httpcore.ConnectError(f"cannot resolve {host}: {err}") from err
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as err:
                error = err
        assert error is not None
        raise error

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        """Unix sockets are never a web_fetch target."""
        raise httpcore.UnsupportedProtocol("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        """Delegate to anyio."""
        await self._inner.sleep(seconds)


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process (loading the CA bundle takes ~0.1 s)."""
    return httpx.create_ssl_context()


class PinnedTransport(httpx.AsyncBaseTransport):
    """httpx transport over an httpcore pool that uses `GuardedBackend` and no keep-alive."""

    def __init__(self, resolver: Resolver = system_resolver) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=_ssl_context(),
            max_keepalive_connections=0,
            network_backend=GuardedBackend(resolver),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request through the guarded pool."""
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        with _mapped():
            resp = await self._pool.handle_async_request(core)
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=_Body(resp.stream),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        """Close the pool."""
        await self._pool.aclose()
