"""Time to first token: `POST /chat` (auth, run, agent loop, AG-UI over SSE) vs the provider alone.

Both ask the same FakeLLM on 127.0.0.1, which streams a short answer at once. The baseline is
`OpenAICompatProvider.stream` called directly (the HTTP request to the model and SSE parsing);
the web figure is a real HTTP client posting to `serve`'s aiohttp app until the first
TEXT_MESSAGE_CONTENT event arrives: token check, session history load, prompt, the model
call, translation to AG-UI and the event log — everything a browser waits for.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

ROUNDS = 60
TOKEN = "bench-web-token"


async def _direct(base_url: str, rounds: int) -> list[float]:
    from larkbot.config import parse_settings
    from larkbot.providers.base import TextChunk
    from larkbot.providers.openai_compat import OpenAICompatProvider
    from larkbot.runtime_factory import new_http_client

    settings = parse_settings({"llm": {"base_url": base_url, "api_key": "sk", "max_retries": 0}})
    out = []
    async with new_http_client() as http:
        provider = OpenAICompatProvider(settings.llm, http)
        for _ in range(rounds):
            started = time.perf_counter()
            first = None
            async for event in provider.stream([{"role": "user", "content": "hi"}], None):
                if first is None and isinstance(event, TextChunk):
                    first = time.perf_counter() - started
            assert first is not None
            out.append(first)
    return out


async def _web(base_url: str, home: Path, rounds: int) -> list[float]:
    from larkbot.app import App
    from larkbot.config import parse_settings
    from larkbot.server import create_app

    settings = parse_settings(
        {
            "lark": {"verification_token": "vt"},
            "llm": {"base_url": base_url, "api_key": "sk", "max_retries": 0},
            "storage": {"url": f"sqlite:///{home}/bench.db"},
            "web": {"token": TOKEN},
            "scheduler": {"enabled": False},
        }
    )
    app = App(settings)
    await app.start()
    runner = web.AppRunner(create_app(app), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    out = []
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(rounds):
                started = time.perf_counter()
                first = None
                url = f"http://{host}:{port}/chat"
                async with http.post(url, json={"message": "hi"}, headers=headers) as resp:
                    async for line in resp.content:
                        if first is None and b'"TEXT_MESSAGE_CONTENT"' in line:
                            first = time.perf_counter() - started
                assert first is not None
                out.append(first)
    finally:
        await runner.cleanup()
        await app.stop()
    return out


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run() -> None:
    from tests.fakes.llm import FakeLLM, Reply

    async with FakeLLM() as llm:
        llm.responder = lambda body: Reply(text="Hello there, a streamed answer.", text_chunk=4)
        with tempfile.TemporaryDirectory() as tmp:
            await _direct(llm.base_url, 5)  # warm-up: imports, connection pool
            direct = await _direct(llm.base_url, ROUNDS)
            over_web = await _web(llm.base_url, Path(tmp), ROUNDS)
    d50, w50 = statistics.median(direct) * 1000, statistics.median(over_web) * 1000
    print(f"time to first token, {ROUNDS} turns each (FakeLLM on loopback):")
    print(f"  provider.stream direct   p50 {d50:7.2f} ms   p90 {_ms(direct, 0.9):7.2f} ms")
    print(f"  POST /chat (AG-UI SSE)   p50 {w50:7.2f} ms   p90 {_ms(over_web, 0.9):7.2f} ms")
    print(f"  ratio /chat / direct     {w50 / d50:5.2f}x (p50); overhead {w50 - d50:.2f} ms")


def main() -> None:
    """Run the benchmark and print its figures."""
    asyncio.run(_run())
