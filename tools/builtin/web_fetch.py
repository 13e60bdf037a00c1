"""web_fetch: read a web page as text — SSRF-guarded, size-capped, marked as untrusted."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from larkbot.context import RequestContext
from larkbot.logs import get_logger
from tools.base import BaseTool, ContextTool, ToolResult
from tools.runtime import ToolRuntime
from tools.web.extract import (
    cap,
    decode_body,
    is_html,
    is_textual,
    wrap_untrusted,
)
from tools.web.extract_pool import ExtractPool
from tools.web.fetcher import Fetcher, FetchError, Page
from tools.web.ssrf import BlockedAddress

log = get_logger(__name__)


def _render(page: Page, original: str, title: str, text: str) -> str:
    """Where the text came from and what was cut, then the page's own words (title included)
    inside the untrusted-content wrapper."""
    lines = [f"URL: {page.url}"]
    if page.redirects:
        lines.append(f"Redirected from: {original} ({page.redirects} hop(s))")
    lines.append(f"Content-Type: {page.content_type or 'unknown'}")
    if page.truncated:
        lines.append(f"Note: body cut at {len(page.body):,} bytes (tools.web_fetch.max_bytes)")
    body = cap(text) if text else "(no readable text)"
    lines.append(wrap_untrusted(f"Title: {title}\n\n{body}" if title else body, page.url))
    return "\n".join(lines)


class WebFetchTool(ContextTool):
    """web_fetch: GET a URL and return its readable text (HTML main text, or text/JSON as is)."""

    name = "web_fetch"
    untrusted_output = True  # pages are written by strangers: later side effects need approval
    untrusted_kind = "web"
    description = (
        "Fetch a web page by URL and return its readable text: the article text of HTML pages "
        "(navigation, scripts and ads removed) with the title, or plain text/JSON as is; at most "
        "8,000 characters. Static pages only (no JavaScript). Private and internal network "
        "addresses are refused."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"url": {"type": "string", "description": "http(s) URL to fetch"}},
        "required": ["url"],
    }

    def __init__(self, rt: ToolRuntime, fetcher: Fetcher | None = None) -> None:
        self._rt = rt
        self._fetcher = fetcher or Fetcher()
        self._extract = ExtractPool()

    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> ToolResult:
        """Fetch, decode, extract and wrap; every failure becomes an error result."""
        url = str(kwargs.get("url") or "").strip()
        if not url:
            return ToolResult("web_fetch needs a url", is_error=True)
        cfg = self._rt.live.get().tools.web_fetch
        if cfg.allow_private_networks and not ctx.is_owner:
            # The owner opened their own network to their own fetches, not to everyone in chat.
            cfg = cfg.model_copy(update={"allow_private_networks": False})
        try:
            page = await self._fetcher.fetch(url, cfg)
        except BlockedAddress as err:
            return ToolResult(f"Refused to fetch {url}: {err}", is_error=True)
        except FetchError as err:
            return ToolResult(f"Cannot fetch {url}: {err}", is_error=True)
        except (TimeoutError, httpx.TimeoutException):
            return ToolResult(
                f"Fetching {url} timed out after {cfg.timeout_seconds:g} s", is_error=True
            )
        except (httpx.HTTPError, httpx.InvalidURL) as err:
            # the query string may carry a key the model was given: log the address only
            log.info("web_fetch_failed", url=url.split("?", 1)[0], error=type(err).__name__)
            return ToolResult(f"Cannot fetch {url}: {type(err).__name__}: {err}", is_error=True)
        if page.status >= 400:
            return ToolResult(
                f"{page.url} answered HTTP {page.status} {page.reason}".rstrip(), is_error=True
            )
        if not is_textual(page.content_type):
            media = page.content_type.split(";")[0]
            return ToolResult(
                f"{page.url} is {media}; web_fetch reads only HTML, text, JSON and XML",
                is_error=True,
            )
        text = await asyncio.to_thread(decode_body, page.body, page.content_type)
        title = ""
        if is_html(page.content_type, text):
            budget = self._rt.live.get().tools.web_fetch.extract_seconds
            title, text, complete = await self._extract.extract(text, page.url, budget)
            if not complete:
                text = f"[full extraction took over {budget:g} s; plain text shown]\n{text}"
        return ToolResult(_render(page, url, title, text.strip()))

    async def aclose(self) -> None:
        """Close the fetcher's client and the extraction worker (the core calls this)."""
        await self._fetcher.aclose()
        await self._extract.aclose()


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The web_fetch tool with its own pinned-transport client (shared by every call)."""
    return [WebFetchTool(rt)]
