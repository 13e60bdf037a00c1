"""Helpers for Lark service tests: events built, encrypted and signed like Lark; a served App."""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from larkbot.app import App
from larkbot.config import Settings, parse_settings
from larkbot.lark.arrival import crypto
from larkbot.server import create_app
from tests.processes import free_port

ENCRYPT_KEY = "test key"
TOKEN = "vtoken"
OWNER = "ou_owner"
_ids = itertools.count(1)


def message_event(
    text: str = "hello",
    *,
    chat_id: str = "oc_dm",
    chat_type: str = "p2p",
    sender: str = OWNER,
    message_id: str | None = None,
    mentions: list[dict[str, Any]] | None = None,
    **message: Any,
) -> dict[str, Any]:
    """A schema-2.0 im.message.receive_v1 envelope (plaintext, with the verification token)."""
    n = next(_ids)
    body: dict[str, Any] = {
        "message_id": message_id or f"om_test_{n}",
        "chat_id": chat_id,
        "chat_type": chat_type,
        "message_type": "text",
        "content": json.dumps({"text": text}),
        "create_time": str(int(time.time() * 1000)),
        **message,
    }
    if mentions:
        body["mentions"] = mentions
    return {
        "schema": "2.0",
        "header": {
            "event_id": f"ev_{n}",
            "event_type": "im.message.receive_v1",
            "token": TOKEN,
            "create_time": str(int(time.time() * 1000)),
            "app_id": "cli_test",
        },
        "event": {
            "sender": {"sender_id": {"open_id": sender}, "sender_type": "user"},
            "message": body,
        },
    }


def bot_mention(n: int = 1, open_id: str = "ou_bot", name: str = "larkbot") -> dict[str, Any]:
    """A `mentions[]` entry (the FakeLark bot's open_id by default)."""
    return {"key": f"@_user_{n}", "id": {"open_id": open_id}, "name": name}


def seal(payload: dict[str, Any] | bytes, key: str = ENCRYPT_KEY) -> tuple[bytes, dict[str, str]]:
    """Encrypt and sign like Lark: the `{"encrypt": ...}` body and its signature headers."""
    plain = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    body = json.dumps({"encrypt": crypto.encrypt(plain, key)}).encode()
    ts, nonce = str(int(time.time())), f"n{next(_ids)}"
    headers = {
        "X-Lark-Request-Timestamp": ts,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": crypto.signature(ts, nonce, key, body),
        "Content-Type": "application/json",
    }
    return body, headers


def settings_for(home: Path, lark_domain: str, llm_url: str, **over: Any) -> Settings:
    """Settings pointing at the fakes, with encryption on and one configured owner."""
    raw: dict[str, Any] = {
        "lark": {
            "app_id": "cli_test",
            "app_secret": "secret",
            "encrypt_key": ENCRYPT_KEY,
            "verification_token": TOKEN,
            "domain": lark_domain,
            "streaming": False,
        },
        "llm": {"base_url": llm_url, "api_key": "sk-test", "max_retries": 0},
        "storage": {"url": f"sqlite:///{home}/larkbot.db"},
        "owner": {"open_ids": [OWNER]},
    }
    for section, values in over.items():
        raw.setdefault(section, {}).update(values)
    return parse_settings(raw)


class Served:
    """An App behind the real aiohttp application on 127.0.0.1, plus an HTTP client for it."""

    def __init__(self, settings: Settings, lease_seconds: float = 60.0) -> None:
        self.app = App(settings, lease_seconds=lease_seconds)
        self.server: TestServer | None = None
        self.http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Served:
        await self.app.start()
        self.server = TestServer(create_app(self.app), host="127.0.0.1")
        await self.server.start_server()
        self.http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self, drain: float | None = None) -> None:
        """Drain (bounded), stop the server and the App."""
        if drain is not None:
            await self.app.drain(drain)
        if self.http is not None:
            await self.http.close()
            self.http = None
        if self.server is not None:
            await self.server.close()
            self.server = None
        await self.app.stop()

    async def lapse(self, message_id: str) -> None:
        """This replica's lease on the message runs out now (as when its loop is starved)."""
        await self.app.journal.release(message_id)

    async def sweep(self) -> int:
        """The sweeper's pass now: requeue expired claims (crashed turns); returns how many."""
        return await self.app.dispatcher.recover()

    def url(self, path: str) -> str:
        """Absolute URL of `path` on the test server."""
        assert self.server is not None
        return str(self.server.make_url(path))

    async def post_raw(
        self, body: bytes, headers: dict[str, str] | None = None, path: str = "/lark/events"
    ) -> tuple[int, Any]:
        """POST raw bytes; (status, parsed JSON body or None)."""
        assert self.http is not None
        async with self.http.post(self.url(path), data=body, headers=headers or {}) as resp:
            try:
                data = await resp.json(content_type=None)
            except ValueError:
                data = None
            return resp.status, data

    async def post_event(self, envelope: dict[str, Any]) -> tuple[int, Any]:
        """POST an event encrypted and signed like Lark does."""
        body, headers = seal(envelope)
        return await self.post_raw(body, headers)


REDIS = shutil.which("redis-server")


@contextlib.contextmanager
def redis_server(tmp_path: Path) -> Iterator[str]:
    """A throwaway redis-server on a free loopback port, ready when it says so; yields its URL."""
    if REDIS is None:
        pytest.fail(
            "redis-server is not installed: `make test` installs it (apt-get install redis-server)"
        )
    port = free_port()
    proc = subprocess.Popen(
        [
            REDIS,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 10
        for line in proc.stdout:  # blocks per line; redis logs promptly at start
            if "Ready to accept connections" in line:
                break
            assert time.monotonic() < deadline, "redis-server did not start"
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
