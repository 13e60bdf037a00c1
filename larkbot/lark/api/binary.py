"""Binary answers of the Lark Open Platform: capped downloads, file names, JSON error bodies."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import httpx

from larkbot.lark.api.errors import LarkAPIError

TRANSPORT_ERROR = -1  # `LarkAPIError.code` when no Lark answer was received at all


@dataclass(frozen=True)
class Download:
    """A downloaded resource: its bytes, content type and the file name Lark gave (if any)."""

    content: bytes
    content_type: str
    filename: str


class TooLarge(LarkAPIError):
    """A download would exceed its byte cap; nothing past the cap was read."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(TRANSPORT_ERROR, f"resource of {size}+ bytes exceeds the {limit} cap")
        self.size = size
        self.limit = limit


def is_json(resp: httpx.Response) -> bool:
    """Lark answered JSON (an error body) rather than the resource."""
    return resp.headers.get("content-type", "").startswith("application/json")


def _filename(resp: httpx.Response) -> str:
    disposition = resp.headers.get("content-disposition", "")
    match = re.search(r"filename\*=UTF-8''([^;]+)|filename=\"?([^\";]+)", disposition)
    if not match:
        return ""
    return unquote(match.group(1) or match.group(2) or "").strip()


async def read_capped(resp: httpx.Response, max_bytes: int) -> Download:
    """The body, refused (TooLarge) as soon as it is known to exceed `max_bytes`."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(int(declared), max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(size, max_bytes)
        chunks.append(chunk)
    kind = resp.headers.get("content-type", "application/octet-stream").split(";")[0].strip()
    return Download(b"".join(chunks), kind, _filename(resp))


def decode_json(raw: bytes) -> dict[str, Any]:
    """A JSON object body, or {}."""
    try:
        body = json.loads(raw)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def code_of(status: int, body: dict[str, Any]) -> int:
    """The Lark `code` of an answer; a bare HTTP error counts as TRANSPORT_ERROR."""
    code = body.get("code")
    if isinstance(code, int):
        return code
    return 0 if status < 400 else TRANSPORT_ERROR
