"""Which URLs a tab may open or be read at: http, https and about:blank, nothing else.

The scheme rule closes `file://` (local files readable through a snapshot, OpenClaw's
GHSA-45cg-2683-gfmq), `chrome://`, `view-source:`, `javascript:` and `data:`. Literal private
addresses and internal names are refused before the browser is asked (the proxy checks
resolved names on every request, redirects included).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from tools.web.ssrf import BlockedAddress, check_host

ALLOWED_SCHEMES = ("http", "https")
BLANK = "about:blank"


class UrlRefused(Exception):
    """A URL the browser tools will not open or read."""


def check_url(url: str, allow_private: bool) -> str:
    """The URL to open (a bare host gets https://), or UrlRefused saying why."""
    text = url.strip()
    if text == BLANK:
        return text
    if "://" not in text and ":" not in text.split("/", 1)[0]:
        text = "https://" + text  # "example.com/page": what a person means by it
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as err:
        raise UrlRefused(f"invalid URL {url!r}: {err}") from None
    if parts.scheme.lower() not in ALLOWED_SCHEMES:
        raise UrlRefused(
            f"only http, https and about:blank can be opened, not {parts.scheme or '?'}:"
        )
    if not parts.hostname:
        raise UrlRefused(f"URL has no host: {url!r}")
    if not allow_private:
        try:
            check_host(parts.hostname)
        except BlockedAddress as err:  # a literal private address or an internal name
            raise UrlRefused(str(err)) from None
    return text


def readable(url: str) -> bool:
    """True when a tab showing `url` may be snapshotted, read or screenshotted."""
    if url == BLANK:
        return True
    return urlsplit(url).scheme.lower() in ALLOWED_SCHEMES


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, lower-cased (else the URL itself).

    It is also the consent scope of acting on the page: the policy reads a scope of this form
    as an origin grant covering every URL of that origin (`larkbot/policy/grants.py`).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    return f"{parts.scheme}://{parts.netloc}".lower()
