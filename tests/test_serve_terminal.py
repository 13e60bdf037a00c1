"""`larkbot serve` on a terminal (a real pty, pexpect): the start screen, readable log lines,
Ctrl-C drains within the drain time, a second Ctrl-C exits at once."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pexpect
import pytest

from tests.fakes.llm import FakeLLM
from tests.lark_harness import free_port

TOKEN = r"web token  (\S+)"


def _config(home: Path, port: int, llm_url: str, drain: float, key: str = "") -> Path:
    config = home / "config.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: {drain}}}\n"
        "lark: {verification_token: vt}\n"
        f"llm: {{base_url: '{llm_url}', api_key: '{key}', max_retries: 0}}\n"
        f"storage: {{url: 'sqlite:///{home}/larkbot.db'}}\n"
    )
    return config


def _spawn(home: Path, config: Path, **extra: str) -> pexpect.spawn:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LARK_", "LARKBOT_"))}
    env |= {"LARKBOT_HOME": str(home), "TERM": "dumb", "NO_COLOR": "1", **extra}
    return pexpect.spawn(
        sys.executable,
        ["-m", "larkbot", "serve", "--config", str(config)],
        env=env,
        encoding="utf-8",
        dimensions=(50, 220),
        timeout=60,
    )


@pytest.fixture
async def served(home: Path, fake_llm: FakeLLM) -> AsyncIterator[tuple[pexpect.spawn, int]]:
    """serve on a pty, no Lark credentials, a slow model; yields the child and its port."""
    port = free_port()
    child = _spawn(home, _config(home, port, fake_llm.base_url, drain=60))
    try:
        yield child, port
    finally:
        if child.isalive():
            child.terminate(force=True)


async def test_start_screen_then_ctrl_c_twice_exits_at_once(
    served: tuple[pexpect.spawn, int], fake_llm: FakeLLM
) -> None:
    child, port = served
    await child.expect("larkbot is running", async_=True)
    await child.expect(rf"web chat   http://127\.0\.0\.1:{port}/", async_=True)
    await child.expect(TOKEN, async_=True)
    token = child.match.group(1)
    await child.expect("missing    Lark app credentials", async_=True)
    await child.expect(r"next       run `larkbot setup`", async_=True)
    assert "{" not in child.before  # human-readable log lines, not JSON

    fake_llm.reply_text("far too late", delay=120)  # a turn that outlasts any patience
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=180) as http:
        chat = asyncio.create_task(http.post("/chat", json={"message": "hi"}, headers=headers))
        deadline = time.monotonic() + 30
        while not fake_llm.requests:  # the model is thinking
            assert time.monotonic() < deadline and not chat.done(), "the turn never started"
            await asyncio.sleep(0.05)
        child.sendintr()
        await child.expect("Press Ctrl-C again to stop at once", async_=True)
        started = time.monotonic()
        child.sendintr()
        await child.expect(pexpect.EOF, async_=True, timeout=30)
        chat.cancel()
    assert time.monotonic() - started < 30  # not the 60 s drain (half of it: a loaded machine)
    child.close()
    assert child.exitstatus == 130


async def test_ctrl_c_stops_within_the_drain_time(home: Path, fake_llm: FakeLLM) -> None:
    port = free_port()
    child = _spawn(home, _config(home, port, fake_llm.base_url, drain=2))
    try:
        await child.expect(TOKEN, async_=True)
        token = child.match.group(1)
        fake_llm.reply_text("far too late", delay=120)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=180) as http:
            chat = asyncio.create_task(http.post("/chat", json={"message": "x"}, headers=headers))
            deadline = time.monotonic() + 30
            while not fake_llm.requests:
                assert time.monotonic() < deadline and not chat.done(), "the turn never started"
                await asyncio.sleep(0.05)
            started = time.monotonic()
            child.sendintr()
            await child.expect(pexpect.EOF, async_=True, timeout=30)
            chat.cancel()
        # drain, closing grace, a loaded machine: still well below the 120 s turn and the
        # default 30 s drain
        assert time.monotonic() - started < 2 + 5 + 13
        child.close()
        assert child.exitstatus == 0  # drained in time: a clean exit
    finally:
        if child.isalive():
            child.terminate(force=True)


async def test_refused_llm_key_is_named_on_the_start_screen(home: Path) -> None:
    async with FakeLLM(api_key="the-right-key") as llm:
        port = free_port()
        child = _spawn(home, _config(home, port, llm.base_url, drain=5, key="wrong"))
        try:
            await child.expect("refused llm.api_key", async_=True)
            await child.expect("larkbot is running", async_=True)
            await child.expect("missing    a working LLM key", async_=True)
            await child.expect(r"next       check that llm.api_key \(LLM_API_KEY\)", async_=True)
            child.sendintr()
            await child.expect(pexpect.EOF, async_=True, timeout=30)
        finally:
            if child.isalive():
                child.terminate(force=True)


async def test_json_lines_on_a_terminal_when_asked(home: Path, fake_llm: FakeLLM) -> None:
    port = free_port()
    config = _config(home, port, fake_llm.base_url, drain=5)
    child = _spawn(home, config, LARKBOT_LOG_FORMAT="json")
    try:
        await child.expect(r'\{[^\n]*"event": "serving"', async_=True)
        child.sendintr()
        await child.expect(pexpect.EOF, async_=True, timeout=30)
        assert "larkbot is running" not in child.before  # no screen: a machine reads this
    finally:
        if child.isalive():
            child.terminate(force=True)
