"""web_search providers: DuckDuckGo (ddgs), Tavily and SearXNG, each returning `Hit`s or raising.

`choose_provider` applies the config rules at call time, so editing the config file switches
the provider or key on the next search. DuckDuckGo goes through the `ddgs` library, which uses
its own Rust HTTP client (primp), not httpx: its seam is the injectable `DdgSearch` function.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from larkbot.config import WebSearchConfig

TAVILY_URL = "https://api.tavily.com/search"
DdgSearch = Callable[[str, int, float], list[dict[str, Any]]]

_TAVILY_ERRORS = {
    400: "Tavily rejected the request (HTTP 400)",
    401: "Tavily rejected the API key (HTTP 401): check tools.web_search.api_key",
    403: "Tavily refused the request (HTTP 403): the key's plan does not allow it",
    429: "Tavily rate or usage limit reached (HTTP 429): try again later",
    432: "Tavily plan limit reached (HTTP 432)",
    433: "Tavily pay-as-you-go limit reached (HTTP 433)",
}
SEARXNG_JSON_HINT = (
    "SearXNG at {url} answered HTTP 403: the instance does not allow format=json. Enable it in "
    "the instance's settings.yml (search: formats: [html, json]) — deploy/searxng/settings.yml "
    "in this repository already does — or point tools.web_search.base_url at an instance that "
    "has it."
)


class SearchError(Exception):
    """A search failed; the message is meant for the model."""


@dataclass(frozen=True)
class Hit:
    """One search result."""

    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class Choice:
    """The provider to use for this call, after the config and environment rules."""

    provider: str
    base_url: str
    api_key: str
    timeout: float


def choose_provider(cfg: WebSearchConfig, env: Mapping[str, str]) -> Choice:
    """Apply the rules: base_url from config, else SEARXNG_BASE_URL, which then also selects
    searxng — whatever provider the config names (the example config names duckduckgo, and a
    compose user who copies it must not keep DuckDuckGo with the SearXNG container unused),
    except Tavily with an API key: a paid key is a deliberate choice."""
    provider, base_url = cfg.provider, cfg.base_url.strip()
    key = cfg.api_key.get_secret_value().strip()
    env_url = env.get("SEARXNG_BASE_URL", "").strip()
    if not base_url and env_url:
        base_url = env_url
        if not (provider == "tavily" and key):
            provider = "searxng"
    return Choice(provider, base_url.rstrip("/"), key, cfg.timeout_seconds)


def ddgs_text(query: str, max_results: int, timeout: float) -> list[dict[str, Any]]:
    """The real DuckDuckGo search through ddgs (synchronous; run it in a thread)."""
    from ddgs import DDGS

    return DDGS(timeout=max(1, math.ceil(timeout))).text(query, max_results=max_results)


async def duckduckgo(search: DdgSearch, choice: Choice, query: str, n: int) -> list[Hit]:
    """Search through ddgs in a thread; its 'no results' exception means an empty list."""
    from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

    try:
        async with asyncio.timeout(choice.timeout):
            rows = await asyncio.to_thread(search, query, n, choice.timeout)
    except TimeoutError:
        raise SearchError(f"DuckDuckGo search timed out after {choice.timeout:g} s") from None
    except TimeoutException as err:
        raise SearchError(f"DuckDuckGo search timed out: {err}") from None
    except RatelimitException as err:
        raise SearchError(f"DuckDuckGo rate-limited the search: {err}; try again later") from None
    except DDGSException as err:
        if "no results" in str(err).lower():
            return []
        raise SearchError(f"DuckDuckGo search failed: {err}") from None
    return [Hit(r.get("title", ""), r.get("href", ""), r.get("body", "")) for r in rows][:n]


async def tavily(http: httpx.AsyncClient, choice: Choice, query: str, n: int) -> list[Hit]:
    """POST the query to Tavily's search API."""
    if not choice.api_key:
        raise SearchError("Tavily needs an API key: set tools.web_search.api_key (tvly-…)")
    response = await _send(
        "Tavily",
        http.post(
            TAVILY_URL,
            json={"query": query, "max_results": n, "search_depth": "basic"},
            headers={"Authorization": f"Bearer {choice.api_key}"},
            timeout=choice.timeout,
        ),
        choice.timeout,
    )
    if response.status_code != 200:
        default = f"Tavily search failed (HTTP {response.status_code})"
        raise SearchError(_TAVILY_ERRORS.get(response.status_code, default))
    rows = _json(response, "Tavily").get("results") or []
    return [Hit(r.get("title", ""), r.get("url", ""), r.get("content", "")) for r in rows][:n]


async def searxng(http: httpx.AsyncClient, choice: Choice, query: str, n: int) -> list[Hit]:
    """GET /search?format=json on a SearXNG instance; it has no max_results, so slice here."""
    if not choice.base_url:
        raise SearchError(
            "SearXNG needs an instance URL: set tools.web_search.base_url or SEARXNG_BASE_URL"
        )
    response = await _send(
        "SearXNG",
        http.get(
            f"{choice.base_url}/search",
            params={"q": query, "format": "json", "pageno": 1},
            timeout=choice.timeout,
        ),
        choice.timeout,
    )
    if response.status_code == 403:
        raise SearchError(SEARXNG_JSON_HINT.format(url=choice.base_url))
    if response.status_code != 200:
        raise SearchError(f"SearXNG search failed (HTTP {response.status_code})")
    rows = _json(response, "SearXNG").get("results") or []
    return [Hit(r.get("title", ""), r.get("url", ""), r.get("content", "")) for r in rows][:n]


async def _send(name: str, call: Awaitable[httpx.Response], timeout: float) -> httpx.Response:
    try:
        response = await call
    except httpx.TimeoutException:
        raise SearchError(f"{name} search timed out after {timeout:g} s") from None
    except httpx.HTTPError as err:
        raise SearchError(f"{name} search failed: {type(err).__name__}: {err}") from None
    return response


def _json(response: httpx.Response, name: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        raise SearchError(f"{name} answered with something that is not JSON") from None
    if not isinstance(data, dict):
        raise SearchError(f"{name} answered with unexpected JSON")
    return data
