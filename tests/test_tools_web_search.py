"""web_search per provider: Tavily and SearXNG through respx, DuckDuckGo through its search seam.

ddgs talks through its own Rust HTTP client (primp), which respx cannot intercept, so the
DuckDuckGo tests inject the `ddg_search` function the tool is built with, raising ddgs's real
exception types. The provider is read from a real config file on every call (hot switch).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
import yaml
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from larkbot.config import LiveSettings, WebSearchConfig, load_settings
from larkbot.storage.db import Database
from tools.builtin.web_search import WebSearchTool
from tools.runtime import ToolRuntime
from tools.web.search import TAVILY_URL, choose_provider

SEARX = "http://searx.example:8888"
TAVILY_ROWS = [
    {
        "title": "Tavily one",
        "url": "https://one.example/",
        "content": "first  snippet\n",
        "score": 0.9,
    },
    {"title": "Tavily two", "url": "https://two.example/", "content": "second", "score": 0.5},
]
SEARX_ROWS = [
    {
        "title": f"Searx {i}",
        "url": f"https://s{i}.example/",
        "content": f"snippet {i}",
        "engine": "x",
    }
    for i in range(1, 9)
]


class FakeDdg:
    """Stands in for ddgs_text: returns rows or raises, and records calls."""

    def __init__(self, rows: list[dict[str, Any]] | None = None, error: Exception | None = None):
        self.rows = rows or []
        self.error = error
        self.calls: list[tuple[str, int, float]] = []
        self.release = threading.Event()
        self.block = False

    def __call__(self, query: str, max_results: int, timeout: float) -> list[dict[str, Any]]:
        self.calls.append((query, max_results, timeout))
        if self.block:
            self.release.wait(10)
        if self.error:
            raise self.error
        return self.rows


@pytest.fixture
def config(home: Path) -> Iterator[Path]:
    """An empty config file; tests write their `tools:` into it."""
    path = home / "config.yaml"
    path.write_text("{}\n")
    yield path


def write_config(path: Path, web_search: dict[str, Any]) -> None:
    """Rewrite the config file and move its mtime forward (no sleeping for the clock)."""
    before = path.stat().st_mtime_ns
    path.write_text(yaml.safe_dump({"tools": {"web_search": web_search}}))
    os.utime(path, ns=(before + 10**9, before + 10**9))


def make_tool(config: Path, ddg: FakeDdg | None = None) -> WebSearchTool:
    """The tool over a runtime whose settings re-read the file on every call."""
    live = LiveSettings(load_settings(config), check_interval=0)
    http = httpx.AsyncClient(verify=False)  # respx answers; skip loading the CA bundle
    rt = ToolRuntime("cli", live, http, Database(f"sqlite:///{config.parent}/t.db"))
    return WebSearchTool(rt, ddg or FakeDdg())


@pytest.fixture(autouse=True)
def _no_searxng_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEARXNG_BASE_URL", raising=False)


async def test_tavily_success(config: Path) -> None:
    write_config(config, {"provider": "tavily", "api_key": "tvly-123"})
    with respx.mock:
        route = respx.post(TAVILY_URL).respond(200, json={"query": "q", "results": TAVILY_ROWS})
        result = await make_tool(config).run(query="rust async", max_results=2)
    request = route.calls.last.request
    assert request.headers["Authorization"] == "Bearer tvly-123"
    assert json.loads(request.content) == {
        "query": "rust async",
        "max_results": 2,
        "search_depth": "basic",
    }
    assert not result.is_error
    assert result.content.splitlines() == [
        'Search results for "rust async" (Tavily; untrusted web content):',
        "1. Tavily one",
        "   https://one.example/",
        "   first snippet",
        "2. Tavily two",
        "   https://two.example/",
        "   second",
    ]


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (httpx.Response(200, json={"results": []}), 'No results for "q" (Tavily).'),
        (httpx.Response(401, json={"detail": {"error": "bad key"}}), "rejected the API key"),
        (httpx.Response(429, json={}), "rate or usage limit"),
        (httpx.Response(500, text="oops"), "Tavily search failed (HTTP 500)"),
        (httpx.ReadTimeout("slow"), "Tavily search timed out after 15 s"),
        (httpx.ConnectError("refused"), "Tavily search failed: ConnectError"),
    ],
)
async def test_tavily_failures(config: Path, response: Any, message: str) -> None:
    write_config(config, {"provider": "tavily", "api_key": "tvly-123"})
    with respx.mock:
        route = respx.post(TAVILY_URL)
        if isinstance(response, Exception):
            route.side_effect = response
        else:
            route.return_value = response
        result = await make_tool(config).run(query="q")
    assert message in result.content
    assert result.is_error is (not message.startswith("No results"))


async def test_tavily_without_key_is_refused_before_any_request(config: Path) -> None:
    write_config(config, {"provider": "tavily"})
    with respx.mock:  # no routes: any request would fail the test
        result = await make_tool(config).run(query="q")
    assert result.is_error and "tools.web_search.api_key" in result.content


async def test_searxng_success_sliced_to_max_results(config: Path) -> None:
    write_config(config, {"provider": "searxng", "base_url": SEARX + "/"})
    with respx.mock:
        route = respx.get(f"{SEARX}/search").respond(200, json={"results": SEARX_ROWS})
        result = await make_tool(config).run(query="self hosted", max_results=3)
    params = route.calls.last.request.url.params
    assert (params["q"], params["format"]) == ("self hosted", "json")
    assert "3. Searx 3" in result.content and "4. Searx 4" not in result.content
    assert "   https://s2.example/" in result.content


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (httpx.Response(200, json={"results": []}), 'No results for "q" (SearXNG).'),
        (httpx.Response(403, text="Forbidden"), "search: formats: [html, json]"),
        (httpx.Response(502, text="bad gateway"), "SearXNG search failed (HTTP 502)"),
        (httpx.Response(200, text="<html>"), "not JSON"),
        (httpx.ConnectTimeout("slow"), "SearXNG search timed out after 15 s"),
    ],
)
async def test_searxng_failures(config: Path, response: Any, message: str) -> None:
    write_config(config, {"provider": "searxng", "base_url": SEARX})
    with respx.mock:
        route = respx.get(f"{SEARX}/search")
        if isinstance(response, Exception):
            route.side_effect = response
        else:
            route.return_value = response
        result = await make_tool(config).run(query="q")
    assert message in result.content
    assert result.is_error is (not message.startswith("No results"))


async def test_duckduckgo_is_the_default(config: Path) -> None:
    ddg = FakeDdg([{"title": "Duck", "href": "https://duck.example/", "body": "quack"}])
    result = await make_tool(config, ddg).run(query="ducks", max_results=4)
    assert ddg.calls == [("ducks", 4, 15.0)]
    assert result.content.splitlines()[1:] == ["1. Duck", "   https://duck.example/", "   quack"]


@pytest.mark.parametrize(
    ("error", "message", "is_error"),
    [
        (DDGSException("No results found."), 'No results for "q" (DuckDuckGo).', False),
        (TimeoutException("read timed out"), "DuckDuckGo search timed out", True),
        (RatelimitException("202 Ratelimit"), "rate-limited", True),
        (DDGSException("ConnectError: boom"), "DuckDuckGo search failed: ConnectError", True),
    ],
)
async def test_duckduckgo_failures(config: Path, error: Exception, message: str, is_error: bool):
    result = await make_tool(config, FakeDdg(error=error)).run(query="q")
    assert message in result.content
    assert result.is_error is is_error


async def test_duckduckgo_hung_thread_times_out(config: Path) -> None:
    write_config(config, {"timeout_seconds": 0.2})
    ddg = FakeDdg([{"title": "late", "href": "https://late.example/", "body": ""}])
    ddg.block = True
    try:
        result = await make_tool(config, ddg).run(query="q")
    finally:
        ddg.release.set()
    assert result.is_error and "timed out after 0.2 s" in result.content


async def test_hot_switch_by_rewriting_the_config_file(config: Path) -> None:
    ddg = FakeDdg([{"title": "Duck", "href": "https://duck.example/", "body": ""}])
    write_config(config, {"provider": "searxng", "base_url": SEARX})
    tool = make_tool(config, ddg)
    with respx.mock:
        searx = respx.get(f"{SEARX}/search").respond(200, json={"results": SEARX_ROWS})
        tavily = respx.post(TAVILY_URL).respond(200, json={"results": TAVILY_ROWS})
        first = await tool.run(query="q")
        write_config(config, {"provider": "tavily", "api_key": "tvly-new"})
        second = await tool.run(query="q")
        write_config(config, {"provider": "duckduckgo"})
        third = await tool.run(query="q")
    assert "(SearXNG;" in first.content and "(Tavily;" in second.content
    assert "(DuckDuckGo;" in third.content
    assert (searx.call_count, tavily.call_count, len(ddg.calls)) == (1, 1, 1)
    assert tavily.calls.last.request.headers["Authorization"] == "Bearer tvly-new"


async def test_searxng_base_url_env_switches_default_provider(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARXNG_BASE_URL", "http://searxng:8080")
    with respx.mock:
        route = respx.get("http://searxng:8080/search").respond(200, json={"results": SEARX_ROWS})
        result = await make_tool(config).run(query="q", max_results=1)
    assert route.called and "1. Searx 1" in result.content


async def test_searxng_base_url_wins_over_the_copied_example_config(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the compose path: config.example.yaml copied as is (it names duckduckgo, no base_url)
    example = Path(__file__).resolve().parent.parent / "config.example.yaml"
    config.write_text(example.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("SEARXNG_BASE_URL", "http://searxng:8080")
    ddg = FakeDdg()
    with respx.mock:
        route = respx.get("http://searxng:8080/search").respond(200, json={"results": SEARX_ROWS})
        result = await make_tool(config, ddg).run(query="q", max_results=1)
    assert route.called and "(SearXNG;" in result.content and ddg.calls == []


@pytest.mark.parametrize(
    ("cfg", "env", "expected"),
    [
        ({}, "", ("duckduckgo", "")),
        ({}, "http://searxng:8080/", ("searxng", "http://searxng:8080")),
        ({"provider": "searxng"}, "http://env:1", ("searxng", "http://env:1")),
        (
            {"provider": "searxng", "base_url": "http://cfg:2"},
            "http://env:1",
            ("searxng", "http://cfg:2"),
        ),
        ({"base_url": "http://cfg:2"}, "http://env:1", ("duckduckgo", "http://cfg:2")),
        ({"provider": "tavily", "api_key": "k"}, "http://env:1", ("tavily", "http://env:1")),
        ({"provider": "tavily"}, "http://env:1", ("searxng", "http://env:1")),  # no key: unusable
        # the example config names duckduckgo: SEARXNG_BASE_URL still selects SearXNG
        ({"provider": "duckduckgo"}, "http://env:1", ("searxng", "http://env:1")),
    ],
)
def test_searxng_base_url_rule(cfg: dict[str, Any], env: str, expected: tuple[str, str]) -> None:
    choice = choose_provider(WebSearchConfig.model_validate(cfg), {"SEARXNG_BASE_URL": env})
    assert (choice.provider, choice.base_url) == expected


async def test_searxng_without_any_url_says_how_to_set_one(config: Path) -> None:
    write_config(config, {"provider": "searxng"})
    result = await make_tool(config).run(query="q")
    assert result.is_error and "SEARXNG_BASE_URL" in result.content


async def test_empty_query_is_an_error(config: Path) -> None:
    result = await make_tool(config).run(query="  ")
    assert result.is_error
