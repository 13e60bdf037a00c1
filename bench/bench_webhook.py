"""Webhook ack latency (p50/p99) and sustained events/s: larkbot vs lark-oapi's dispatcher.

Both servers run on 127.0.0.1 in this process and receive the same encrypted, signed
`im.message.receive_v1` events. larkbot's path is the real one (verification chain, normalise,
journal claim in SQLite, hand-off to a turn that asks an instant fake model and replies to a
fake Lark). The baseline is lark-oapi 1.7.5's `EventDispatcherHandler.do()` behind a minimal
aiohttp handler whose event callback only counts (no dedupe, no storage, no reply).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

SEQUENTIAL = 250
BURST = 500
CONCURRENCY = 16


def _baseline_app(encrypt_key: str, token: str, seen: list[str]) -> web.Application:
    import lark_oapi as lark
    from lark_oapi.core.model import RawRequest

    def on_message(data: Any) -> None:
        seen.append(data.event.message.message_id)

    handler = (
        lark.EventDispatcherHandler.builder(encrypt_key, token)
        .register_p2_im_message_receive_v1(on_message)
        .build()
    )
    canonical = ("X-Lark-Request-Timestamp", "X-Lark-Request-Nonce", "X-Lark-Signature")

    async def events(request: web.Request) -> web.Response:
        req = RawRequest()
        req.uri = request.path
        # lark-oapi looks headers up case-sensitively: give it the canonical spelling.
        req.headers = {h: request.headers.get(h, "") for h in canonical}
        req.body = await request.read()
        resp = handler.do(req)
        return web.Response(
            status=resp.status_code, body=resp.content, content_type="application/json"
        )

    app = web.Application()
    app.router.add_post("/lark/events", events)
    return app


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}/lark/events"


Sealer = Callable[[int], tuple[bytes, dict[str, str]]]


async def _measure(url: str, seal: Sealer, offset: int) -> dict[str, float]:
    """Sequential latencies, then a concurrent burst for throughput."""
    lat: list[float] = []
    async with aiohttp.ClientSession() as http:

        async def post(i: int) -> float:
            body, headers = seal(offset + i)
            started = time.perf_counter()
            async with http.post(url, data=body, headers=headers) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            return time.perf_counter() - started

        for i in range(SEQUENTIAL):
            lat.append(await post(i))
        sem = asyncio.Semaphore(CONCURRENCY)

        async def bounded(i: int) -> float:
            async with sem:
                return await post(SEQUENTIAL + i)

        started = time.perf_counter()
        await asyncio.gather(*(bounded(i) for i in range(BURST)))
        burst = time.perf_counter() - started
    lat.sort()
    return {
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": lat[int(len(lat) * 0.99) - 1] * 1000,
        "events_per_s": BURST / burst,
    }


def _fakes_process(conn: Any) -> None:
    """Child process: FakeLark + an instant FakeLLM, so they do not share our event loop."""
    from tests.fakes.lark_server import FakeLark
    from tests.fakes.llm import FakeLLM, Reply

    async def run() -> None:
        async with FakeLark() as fake_lark, FakeLLM() as llm:
            llm.responder = lambda body: Reply(text="ok")
            conn.send((fake_lark.domain, llm.base_url))
            while not await asyncio.to_thread(conn.poll, 0.2):
                pass
            conn.recv()
            conn.send(len(fake_lark.sent))

    asyncio.run(run())


async def _larkbot(
    lark_domain: str, llm_url: str, ack_budget: float, offset: int
) -> dict[str, Any]:
    """One larkbot run on a fresh home; `ack_budget` 0 acks before the journal claim commits."""
    from pathlib import Path

    from tests.lark_harness import Served, message_event, seal, settings_for

    home = Path(tempfile.mkdtemp(prefix="larkbot-bench-"))
    os.environ["LARKBOT_HOME"] = str(home)

    def sealer(i: int) -> tuple[bytes, dict[str, str]]:
        return seal(message_event(f"hi {i}", chat_id=f"oc_{i % 50}", message_id=f"om_b{i}"))

    async with Served(settings_for(home, lark_domain, llm_url)) as ours:
        figures: dict[str, Any] = await _measure(ours.url("/lark/events"), sealer, offset)
        figures["drained"] = await ours.app.dispatcher.join(120)
    return figures


async def _run() -> None:
    import multiprocessing as mp

    from larkbot.logs import configure_logging
    from tests.lark_harness import ENCRYPT_KEY, TOKEN, message_event, seal

    configure_logging("error", "json")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_fakes_process, args=(child,), daemon=True)
    proc.start()
    try:
        lark_domain, llm_url = await asyncio.to_thread(parent.recv)
        durable = await _larkbot(lark_domain, llm_url, 0.05, 0)
        fast = durable
        parent.send("report")
        replies = await asyncio.to_thread(parent.recv)
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    seen: list[str] = []

    def sealer(i: int) -> tuple[bytes, dict[str, str]]:
        return seal(message_event(f"hi {i}", chat_id=f"oc_{i % 50}", message_id=f"om_b{i}"))

    runner, base_url = await _serve(_baseline_app(ENCRYPT_KEY, TOKEN, seen))
    try:
        theirs = await _measure(base_url, sealer, 100_000)
    finally:
        await runner.cleanup()
    _report(durable, fast, theirs, replies, len(seen))


def _report(
    durable: dict[str, Any], fast: dict[str, Any], theirs: dict[str, Any], replies: int, seen: int
) -> None:
    total = SEQUENTIAL + BURST
    print(f"events: {SEQUENTIAL} sequential + {BURST} at concurrency {CONCURRENCY}, loopback;")
    print("instant fake model + fake Lark in a child process; every larkbot event runs a full turn")
    head = f"{'':24}{'durable':>9}{'fast':>9}{'lark-oapi':>11}{'ratio d/f':>16}"
    print(head)
    for key, label in (
        ("p50_ms", "ack p50 (ms)"),
        ("p99_ms", "ack p99 (ms)"),
        ("events_per_s", "sustained events/s"),
    ):
        base = theirs[key] or float("nan")
        ratios = f"{durable[key] / base:.2f}x/{fast[key] / base:.2f}x"
        print(f"{label:24}{durable[key]:9.2f}{fast[key]:9.2f}{theirs[key]:11.2f}{ratios:>16}")
    print(
        f"larkbot replies delivered: {replies}/{2 * total} (turns finished: "
        f"{durable['drained'] and fast['drained']}); baseline handler calls: {seen}/{total}"
    )
    print("durable (default): the 200 waits for the journal claim in SQLite (<= 50 ms budget);")
    print("fast: ack_budget=0, the claim commits just after the 200. Ratios vs lark-oapi's")
    print(
        "EventDispatcherHandler.do(), which only verifies, decrypts and calls a counting handler."
    )


def main() -> None:
    """Run both servers and print the figures."""
    asyncio.run(_run())


if __name__ == "__main__":
    main()
