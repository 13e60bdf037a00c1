"""Web login: wrong tries slow their own client down, the right token always logs in,
X-Forwarded-For counts only from trusted proxies; numbers in paths and headers are ASCII."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from larkbot.config import parse_settings
from larkbot.errors import ConfigError
from larkbot.web.auth import LoginLimiter
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import AUTH, WEB_TOKEN, chat_turn, web_settings


def test_wrong_tries_wait_longer_and_longer_and_a_right_one_forgives() -> None:
    limiter = LoginLimiter(window=60)
    waits = []
    for n in range(9):
        limiter.failed("a", now=n)
        waits.append(limiter.delay("a", now=n))
    assert waits == [0, 0, 0, 0, 0, 0.5, 1, 2, 4]
    assert limiter.delay("b", now=9) == 0  # per client
    for n in range(9, 20):
        limiter.failed("a", now=n)
    assert limiter.delay("a", now=20) == LoginLimiter.MAX_DELAY  # bounded
    assert limiter.delay("a", now=200) == 0  # the window passed
    limiter.failed("c", now=0)
    limiter.succeeded("c")
    assert limiter.delay("c", now=1) == 0


def test_forwarded_for_is_believed_only_from_trusted_proxies() -> None:
    plain = LoginLimiter()
    assert plain.client("198.51.100.7", ["203.0.113.5"]) == "198.51.100.7"
    proxied = LoginLimiter(["127.0.0.1", "10.0.0.0/8"])
    assert proxied.client("127.0.0.1", ["203.0.113.5"]) == "203.0.113.5"
    assert proxied.client("198.51.100.7", ["203.0.113.5"]) == "198.51.100.7"  # not a proxy
    # the client wrote the left part itself; the first untrusted hop from the right is it
    chain = ["6.6.6.6, 203.0.113.5", "10.1.2.3"]
    assert proxied.client("127.0.0.1", chain) == "203.0.113.5"
    assert proxied.client("127.0.0.1", ["10.0.0.9"]) == "10.0.0.9"  # proxies all the way
    assert proxied.client("127.0.0.1", ["junk, 10.0.0.9"]) == "10.0.0.9"
    assert proxied.client("127.0.0.1", []) == "127.0.0.1"
    assert proxied.client(None, ["203.0.113.5"]) == "?"


def test_trusted_proxies_must_be_addresses_or_networks() -> None:
    ok = parse_settings({"web": {"trusted_proxies": ["127.0.0.1", "10.0.0.0/8", "::1"]}})
    assert ok.web.trusted_proxies == ["127.0.0.1", "10.0.0.0/8", "::1"]
    with pytest.raises(ConfigError, match="trusted_proxies"):
        parse_settings({"web": {"trusted_proxies": ["proxy.local"]}})


async def login(s: Served, token: str, forwarded: str | None = None) -> tuple[int, float]:
    """POST /api/login; (status, seconds it took)."""
    assert s.http is not None
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    started = time.monotonic()
    async with s.http.post(s.url("/api/login"), json={"token": token}, headers=headers) as r:
        return r.status, time.monotonic() - started


async def test_the_right_token_logs_in_after_many_wrong_ones(home: Path, fake_llm: FakeLLM) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        tries = [await login(s, "guess") for _ in range(7)]
        assert [status for status, _ in tries] == [401] * 7  # slowed, never refused
        assert tries[5][1] >= 0.5 and tries[6][1] >= 1.0
        assert (await login(s, WEB_TOKEN))[0] == 200


async def test_a_spoofed_forwarded_for_does_not_escape_the_delay(
    home: Path, fake_llm: FakeLLM
) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        tries = [await login(s, "guess", f"203.0.113.{n}") for n in range(6)]
        assert tries[5][1] >= 0.5  # all one client: the proxy is not trusted


async def test_behind_a_trusted_proxy_each_client_has_its_own_count(
    home: Path, fake_llm: FakeLLM
) -> None:
    settings = web_settings(home, fake_llm.base_url, web={"trusted_proxies": ["127.0.0.1"]})
    async with Served(settings) as s:
        mallory = [await login(s, "guess", "203.0.113.66") for _ in range(8)]
        assert mallory[7][1] >= 2.0  # her next would wait 4 s
        # the owner's is at once, not Mallory's 4 s (room for a loaded machine)
        assert (await login(s, "typo", "198.51.100.1"))[1] < 3.0
        assert (await login(s, WEB_TOKEN, "203.0.113.66"))[0] == 200


async def test_non_ascii_digits_are_404_or_401_never_500(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("hi")
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        events = await chat_turn(s.http, s.url("").rstrip("/"), "hello")
        run = events[0]["runId"]
        for index in ("²", "%C2%B2", "١", "0"):
            async with s.http.get(s.url(f"/api/runs/{run}/files/{index}"), headers=AUTH) as r:
                assert r.status == 404, index
        resume = {**AUTH, "Last-Event-ID": f"{run}:²"}
        async with s.http.post(s.url("/chat"), json={}, headers=resume) as r:
            assert r.status < 500
        cookie = {"Cookie": "larkbot_session=²².x"}
        async with s.http.get(s.url("/api/sessions"), headers=cookie) as r:
            assert r.status == 401
