"""web_search: DuckDuckGo (default, no key), Tavily or SearXNG, chosen from the live config."""

from __future__ import annotations

import os
import re
from typing import Any

from tools.base import BaseTool, ToolResult
from tools.runtime import ToolRuntime
from tools.web.search import (
    DdgSearch,
    Hit,
    SearchError,
    choose_provider,
    ddgs_text,
    duckduckgo,
    searxng,
    tavily,
)

MAX_RESULTS = 20
_NAMES = {"duckduckgo": "DuckDuckGo", "tavily": "Tavily", "searxng": "SearXNG"}


def _one_line(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text or "").strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_hits(query: str, provider: str, hits: list[Hit]) -> str:
    """Numbered results: title, URL and snippet, under a line naming the provider."""
    name = _NAMES.get(provider, provider)
    if not hits:
        return f'No results for "{query}" ({name}).'
    lines = [f'Search results for "{query}" ({name}; untrusted web content):']
    for i, hit in enumerate(hits, 1):
        lines.append(f"{i}. {_one_line(hit.title, 200) or '(no title)'}")
        lines.append(f"   {hit.url}")
        if hit.snippet.strip():
            lines.append(f"   {_one_line(hit.snippet, 400)}")
    return "\n".join(lines)


class WebSearchTool(BaseTool):
    """web_search: search the web and return numbered results (title, URL, snippet)."""

    name = "web_search"
    untrusted_output = True  # pages are written by strangers: later side effects need approval
    untrusted_kind = "web"
    description = (
        "Search the internet. Returns numbered results with title, URL and snippet; "
        "use web_fetch on a URL to read the page."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to search for"},
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "default": 5,
                "description": "number of results (1-20)",
            },
        },
        "required": ["query"],
    }

    def __init__(self, rt: ToolRuntime, ddg_search: DdgSearch = ddgs_text) -> None:
        self._rt = rt
        self._ddg_search = ddg_search

    async def run(self, **kwargs: Any) -> ToolResult:
        """Search with the provider the config names right now."""
        query = str(kwargs.get("query") or "").strip()
        if not query:
            return ToolResult("web_search needs a query", is_error=True)
        try:
            n = max(1, min(MAX_RESULTS, int(kwargs.get("max_results") or 5)))
        except (TypeError, ValueError):
            return ToolResult("max_results must be a number from 1 to 20", is_error=True)
        choice = choose_provider(self._rt.live.get().tools.web_search, os.environ)
        try:
            if choice.provider == "tavily":
                hits = await tavily(self._rt.http, choice, query, n)
            elif choice.provider == "searxng":
                hits = await searxng(self._rt.http, choice, query, n)
            else:
                hits = await duckduckgo(self._ddg_search, choice, query, n)
        except SearchError as err:
            return ToolResult(str(err), is_error=True)
        return ToolResult(format_hits(query, choice.provider, hits))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The web_search tool."""
    return [WebSearchTool(rt)]
