"""GET a URL for web_fetch: SSRF-checked hops, manual bounded redirects, a capped body."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from larkbot.config import WebFetchConfig
from tools.web.extract import is_textual
from tools.web.ssrf import Resolver, check_host, system_resolver
from tools.web.transport import PinnedTransport, allow_private_var

USER_AGENT = "Mozilla/5.0 (compatible; larkbot/0.1; +https://github.com/larkbot/larkbot)"
_HEADERS = {
    "User-Agent": USER_AGENT,
    "Accept": "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5",
    "Accept-Language": "en,zh;q=0.8,*;q=0.5",
}


class FetchError(Exception):
    """A fetch failed for a reason the model should read (bad URL, too many redirects)."""


@dataclass(frozen=True)
class Page:
    """A fetched response: final URL, status, content type, (capped) body."""

    url: str
    status: int
    reason: str
    content_type: str
    body: bytes
    truncated: bool
    redirects: int


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """Read at most max_bytes of the decoded body, then stop reading."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > max_bytes:
            chunks.append(chunk[: max_bytes - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _checked_url(url: httpx.URL, allow_private: bool) -> httpx.URL:
    if url.scheme not in ("http", "https"):
        raise FetchError(f"only http and https URLs can be fetched, not {url.scheme or '?'}://")
    if not url.host:
        raise FetchError(f"URL has no host: {url}")
    if not allow_private:
        check_host(url.host)  # literal addresses and internal names, before any DNS
    return url


def _redirect_target(current: httpx.URL, location: str) -> httpx.URL:
    try:
        return current.join(location)
    except httpx.InvalidURL as err:
        raise FetchError(f"redirect to an invalid URL {location!r}: {err}") from None


class Fetcher:
    """One shared httpx client over the pinned transport; `fetch` follows redirects itself."""

    def __init__(self, resolver: Resolver = system_resolver) -> None:
        self._client = httpx.AsyncClient(
            transport=PinnedTransport(resolver), follow_redirects=False, trust_env=False
        )

    async def fetch(self, url: str, cfg: WebFetchConfig) -> Page:
        """Fetch url under cfg's limits (FetchError, BlockedAddress, httpx errors, TimeoutError)."""
        token = allow_private_var.set(cfg.allow_private_networks)
        try:
            async with asyncio.timeout(cfg.timeout_seconds):
                return await self._follow(url, cfg)
        finally:
            allow_private_var.reset(token)

    async def _follow(self, url: str, cfg: WebFetchConfig) -> Page:
        try:
            current = httpx.URL(url.strip())
        except httpx.InvalidURL as err:
            raise FetchError(f"invalid URL {url!r}: {err}") from None
        for hop in range(cfg.max_redirects + 1):
            _checked_url(current, cfg.allow_private_networks)
            request = self._client.build_request(
                "GET", current, headers=_HEADERS, timeout=cfg.timeout_seconds
            )
            response = await self._client.send(request, stream=True)
            try:
                if response.is_redirect:
                    current = _redirect_target(current, response.headers["location"])
                    continue
                content_type = response.headers.get("content-type", "")
                body, truncated = b"", False
                if is_textual(content_type):
                    body, truncated = await _read_capped(response, cfg.max_bytes)
                return Page(
                    url=str(current),
                    status=response.status_code,
                    reason=response.reason_phrase,
                    content_type=content_type,
                    body=body,
                    truncated=truncated,
                    redirects=hop,
                )
            finally:
                await response.aclose()
        raise FetchError(f"too many redirects (more than {cfg.max_redirects}) starting at {url}")

    async def aclose(self) -> None:
        """Close the client."""
        await self._client.aclose()
