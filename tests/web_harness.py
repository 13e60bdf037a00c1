"""Helpers for web tests: settings with a web token, a served App, an AG-UI SSE reader."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp

from larkbot.config import Settings, parse_settings

WEB_TOKEN = "web-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {WEB_TOKEN}"}


def web_settings(home: Path, llm_url: str, **over: Any) -> Settings:
    """Settings for a web-only serve: FakeLLM, SQLite in `home`, a fixed web token."""
    raw: dict[str, Any] = {
        "lark": {"verification_token": "vt"},
        "llm": {"base_url": llm_url, "api_key": "sk-test", "max_retries": 0},
        "storage": {"url": f"sqlite:///{home}/larkbot.db"},
        "web": {"token": WEB_TOKEN},
        "scheduler": {"enabled": False},
    }
    for section, values in over.items():
        raw.setdefault(section, {}).update(values)
    return parse_settings(raw)


@contextmanager
def outside_tmp() -> Iterator[Path]:
    """A fresh directory outside /tmp (file_write asks no consent under temp directories)."""
    path = Path("/var/tmp") / f"larkbot-web-test-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def sse_events(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(id, event) for each `data:` event of an SSE response; pings are skipped."""
    event_id, data = "", []
    async for raw in resp.content:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield event_id, json.loads("\n".join(data))
            data = []


async def wait_until(condition: Callable[[], object], timeout: float = 30.0) -> None:
    """Poll `condition` (bounded) until it is truthy; fail after `timeout`."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """Event types, with CUSTOM events as CUSTOM:<name>."""
    return [e["type"] + (f":{e['name']}" if e["type"] == "CUSTOM" else "") for e in events]


def text_of(events: list[dict[str, Any]]) -> str:
    """The streamed answer text."""
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def chat_turn(
    http: aiohttp.ClientSession,
    base: str,
    message: str,
    *,
    session_id: str | None = None,
    answer: str | None = None,
    consent_base: str | None = None,
) -> list[dict[str, Any]]:
    """One /chat turn; each consent_request is answered `answer` (POSTed to `consent_base`)."""
    body: dict[str, Any] = {"message": message}
    if session_id:
        body["session_id"] = session_id
    events: list[dict[str, Any]] = []
    async with http.post(f"{base}/chat", json=body, headers=AUTH) as resp:
        assert resp.status == 200, await resp.text()
        async for _, event in sse_events(resp):
            events.append(event)
            if event["type"] == "CUSTOM" and event["name"] == "consent_request" and answer:
                url = f"{consent_base or base}/api/consent/{event['value']['request_id']}"
                async with http.post(url, json={"decision": answer}, headers=AUTH) as r:
                    assert r.status == 200, await r.text()
    return events


def consents(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The consent_request values of a turn."""
    return [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "consent_request"]
