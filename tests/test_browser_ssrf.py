"""The browser's SSRF guard with private networks NOT allowed: nothing reaches the internal server.

`public.test` is a public-looking name (the test resolver maps it to a public address, which
the test connector dials to the public site on 127.0.0.1). Its pages redirect to, fetch() and
open a WebSocket to the internal server on 127.0.0.1 — directly and through `internal.test`,
a name resolving to 127.0.0.1. The internal server records every request; it must get none.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from larkbot.config import parse_settings
from tests.browser_site import (
    INTERNAL_HOST,
    PUBLIC_HOST,
    PUBLIC_IP,
    Sites,
    site_connector,
    site_resolver,
    start_sites,
)
from tests.test_browser_tools import Browser, runtime
from tools.browser.engine import BrowserEngine
from tools.browser.proxy import EgressProxy, Streams

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sites() -> AsyncIterator[Sites]:
    """The public and internal test servers."""
    running = await start_sites()
    yield running
    await running.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine() -> AsyncIterator[BrowserEngine]:
    """One Chromium for the module, with the test DNS and dial seams."""
    settings = parse_settings({})
    eng = BrowserEngine(lambda: settings.browser, site_resolver, site_connector)
    yield eng
    await eng.close()


@pytest.fixture
def guarded(tmp_path: Path, engine: BrowserEngine, request: pytest.FixtureRequest) -> Browser:
    """An owner's session with `tools.web_fetch.allow_private_networks` off (the default)."""
    return Browser(runtime(tmp_path, engine, False), engine, request.node.name)


async def test_public_page_loads_through_the_guard(guarded: Browser, sites: Sites) -> None:
    text = await guarded.do("navigate", url=f"http://{PUBLIC_HOST}:{sites.public_port}/")
    assert "Welcome to the test shop" in text


async def test_fetch_and_websocket_to_loopback_never_arrive(guarded: Browser, sites: Sites) -> None:
    # the refusals are reported with whichever result follows them: read both
    text = await guarded.do("navigate", url=f"http://{PUBLIC_HOST}:{sites.public_port}/ssrf")
    text += await guarded.do("wait", text="probes done", seconds=20)
    assert "INTERNAL-SECRET" not in text and "ws open" not in text
    assert "failed http://127.0.0.1" in text and "ws failed" in text
    assert f"blocked request: http://127.0.0.1:{sites.internal_port}/secret?via=fetch" in text
    assert f"blocked request: http://{INTERNAL_HOST}:{sites.internal_port}/secret" in text
    assert f"blocked request: 127.0.0.1:{sites.internal_port} (" in text  # the WebSocket CONNECT
    assert sites.internal_hits == []


async def test_redirect_to_loopback_never_arrives(guarded: Browser, sites: Sites) -> None:
    result = await guarded.call(
        guarded.page, action="navigate", url=f"http://{PUBLIC_HOST}:{sites.public_port}/redirect"
    )
    assert "INTERNAL-SECRET" not in result.content
    assert "blocked by larkbot's browser guard" in result.content or "loopback" in result.content
    assert sites.internal_hits == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "view-source:file:///etc/passwd",
        "chrome://version",
        "javascript:alert(1)",
        "data:text/html,<h1>hi</h1>",
        "http://127.0.0.1/",
        "http://localhost:8080/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://0x7f.1/",
    ],
)
async def test_urls_refused_before_the_browser_is_asked(guarded: Browser, url: str) -> None:
    result = await guarded.call(guarded.page, action="navigate", url=url)
    assert result.is_error and "refused to open" in result.content
    opened = await guarded.call(guarded.tab, action="open", url=url)
    assert opened.is_error and "refused to open" in opened.content
    assert "root:" not in result.content + opened.content


async def test_file_url_refused_even_with_private_networks_allowed(
    tmp_path: Path, engine: BrowserEngine
) -> None:
    owner = Browser(runtime(tmp_path, engine, True), engine, "file-allowed")
    result = await owner.call(owner.page, action="navigate", url="file:///etc/passwd")
    assert result.is_error and "only http, https and about:blank" in result.content


async def test_proxy_refuses_names_resolving_to_private_addresses_without_dialling() -> None:
    dialled: list[tuple[str, int]] = []

    async def resolver(host: str, port: int) -> list[str]:
        return {
            "intranet.example": ["10.1.2.3"],
            "mixed.example": ["93.184.215.14", "192.168.1.1"],
        }[host]

    async def connector(address: str, port: int):  # type: ignore[no-untyped-def]
        dialled.append((address, port))
        raise OSError("never")

    proxy = EgressProxy(resolver, connector)
    url = await proxy.start()
    host, port = url.removeprefix("http://").split(":")
    try:
        for request in (
            b"CONNECT intranet.example:443 HTTP/1.1\r\nHost: intranet.example:443\r\n\r\n",
            b"GET http://mixed.example/ HTTP/1.1\r\nHost: mixed.example\r\n\r\n",
            b"CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n",
        ):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(request)
            answer = await asyncio.wait_for(reader.read(), 30)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer
        assert dialled == []
        blocked = proxy.take_blocked()
        assert "private network" in blocked[0] and "192.168.1.1" in blocked[1]
        assert "metadata" in blocked[2]
    finally:
        await proxy.close()


async def test_proxy_dials_the_checked_address_so_dns_rebinding_cannot_switch(
    sites: Sites,
) -> None:
    # a rebinding name: public at the first lookup, loopback at every later one
    answers = iter([[PUBLIC_IP], ["127.0.0.1"], ["127.0.0.1"]])
    looked_up: list[str] = []
    dialled: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return next(answers)

    async def connector(address: str, port: int) -> Streams:
        dialled.append(address)
        return await site_connector(address, port)

    proxy = EgressProxy(resolver, connector)
    host, port = (await proxy.start()).removeprefix("http://").split(":")
    target = f"rebind.example:{sites.public_port}"
    try:
        answers_seen = []
        for _ in range(2):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(f"GET http://{target}/second HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            answers_seen.append(await asyncio.wait_for(reader.read(), 30))
            writer.close()
        first, second = answers_seen
        assert first.startswith(b"HTTP/1.1 200") and b"Page 2" in first
        assert b"Connection: close" in first  # no reuse of this connection for a later request
        assert second.startswith(b"HTTP/1.1 403") and b"INTERNAL" not in second
        assert dialled == [PUBLIC_IP]  # the address checked, never the name (nor a re-lookup)
        assert looked_up == ["rebind.example", "rebind.example"]  # each request checked afresh
    finally:
        await proxy.close()
    assert sites.internal_hits == []
