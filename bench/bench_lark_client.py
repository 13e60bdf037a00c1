"""1,000 replies through LarkClient vs lark-oapi's own `areply`, against FakeLark (ratio).

FakeLark runs in a child process: lark-oapi fetches its tenant token with a blocking
`requests.post` from inside the caller's event loop, which would deadlock a same-loop server
(that blocking fetch is part of what is measured: both clients start with a cold token), and a
server thread in our process would fight the clients for the GIL. lark-oapi also builds a new
httpx.AsyncClient (≈30 ms of SSL setup) per call, so its 1,000 sequential replies dominate the
run time; the small concurrent round (100 replies) keeps the run under a minute.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import statistics
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from typing import Any

import httpx

from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.pacing import Pacer
from tests.fakes.lark_server import FakeLark

ROUNDS = ((1, 1000), (10, 100))  # (concurrency, replies per client)
TARGET = "om_bench_target"
ReplyFn = Callable[[int], Awaitable[None]]


class FakeLarkProcess:
    """FakeLark served from a child process (own interpreter: no GIL or loop shared with us)."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.domain = ""
        self.stats: dict[str, int] = {}

    def __enter__(self) -> FakeLarkProcess:
        self._proc.start()
        if not self._conn.poll(30):
            raise RuntimeError("FakeLark process did not start")
        self.domain = self._conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        if self._conn.poll(10):
            self.stats = self._conn.recv()
        self._proc.join(10)


def _serve(conn: Connection) -> None:
    asyncio.run(_serve_async(conn))


async def _serve_async(conn: Connection) -> None:
    async with FakeLark(chat_limit=0) as fake:  # no per-chat limit: client overhead only
        fake.add_message(TARGET, chat_id="oc_bench")
        conn.send(fake.domain)
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        conn.send({"sent": len(fake.sent), "token_fetches": fake.token_fetches})


async def _run(reply: ReplyFn, n: int, concurrency: int) -> tuple[float, float, list[float]]:
    """Send `n` replies, `concurrency` in flight: (wall s, our CPU s, per-call latencies)."""
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with gate:
            started = time.perf_counter()
            await reply(i)
            latencies.append(time.perf_counter() - started)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started, time.process_time() - cpu, latencies


def _ours(http: httpx.AsyncClient, fake: FakeLarkProcess, tag: str) -> ReplyFn:
    client = LarkClient(http, fake.domain, "cli_test", "secret")
    # Lark's real limits (5/s per chat, 50/s per app) would make this a clock, not a benchmark:
    # the pacer runs (its bookkeeping is measured) with limits no burst here reaches
    client.transport.pacer = Pacer(per_chat=10**6, per_app=10**6, messages_per_minute=10**6)

    async def reply(i: int) -> None:
        await client.reply(TARGET, "text", {"text": f"hi {i}"}, uuid=f"ours-{tag}-{i}")

    return reply


def _sdk(fake: FakeLarkProcess, tag: str) -> ReplyFn:
    import lark_oapi as lark
    from lark_oapi.api.im.v1 import ReplyMessageRequest, ReplyMessageRequestBody
    from lark_oapi.core.token.manager import TokenManager

    TokenManager.cache.cache.clear()  # type: ignore[attr-defined]  # cold token, like ours
    client = (
        lark.Client.builder()
        .app_id("cli_test")
        .app_secret("secret")
        .domain(fake.domain)
        .log_level(lark.LogLevel.ERROR)
        .build()
    )

    async def reply(i: int) -> None:
        body = (
            ReplyMessageRequestBody.builder()
            .msg_type("text")
            .content(json.dumps({"text": f"hi {i}"}))
            .uuid(f"sdk-{tag}-{i}")
            .build()
        )
        req = ReplyMessageRequest.builder().message_id(TARGET).request_body(body).build()
        resp = await client.im.v1.message.areply(req)
        if not resp.success():
            raise RuntimeError(f"lark-oapi reply failed: {resp.code} {resp.msg}")

    return reply


def _ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000


async def _bench(fake: FakeLarkProcess) -> list[dict[str, Any]]:
    rows = []
    async with httpx.AsyncClient() as http:
        await _run(_ours(http, fake, "warm"), 20, 5)  # imports and code paths, not measured
        await _run(_sdk(fake, "warm"), 20, 5)
        for concurrency, n in ROUNDS:
            tag = f"c{concurrency}"
            ours, ours_cpu, ours_lat = await _run(_ours(http, fake, tag), n, concurrency)
            sdk, sdk_cpu, sdk_lat = await _run(_sdk(fake, tag), n, concurrency)
            rows.append(
                {
                    "concurrency": concurrency,
                    "n": n,
                    "ours_s": ours,
                    "sdk_s": sdk,
                    "ours_cpu": ours_cpu,
                    "sdk_cpu": sdk_cpu,
                    "ours_p50": _ms(ours_lat, 50),
                    "ours_p99": _ms(ours_lat, 99),
                    "sdk_p50": _ms(sdk_lat, 50),
                    "sdk_p99": _ms(sdk_lat, 99),
                }
            )
    return rows


def main() -> None:
    """Print replies/s, per-call p50/p99 and the speed-up ratio for each round."""
    with FakeLarkProcess() as fake:
        rows = asyncio.run(_bench(fake))
    expected = 2 * (20 + sum(n for _, n in ROUNDS))
    sent = fake.stats.get("sent")
    assert sent == expected, f"FakeLark recorded {sent} replies, expected {expected} (once each)"
    print(f"FakeLark (child process) recorded {sent} replies, once each; {fake.stats}")
    for r in rows:
        n = r["n"]
        print(
            f"  {n} replies, concurrency {r['concurrency']:>2}: "
            f"LarkClient {n / r['ours_s']:6.0f}/s "
            f"(p50 {r['ours_p50']:.2f} ms, p99 {r['ours_p99']:.2f} ms) | lark-oapi areply "
            f"{n / r['sdk_s']:5.0f}/s (p50 {r['sdk_p50']:.2f} ms, p99 {r['sdk_p99']:.2f} ms) "
            f"| ratio {r['sdk_s'] / r['ours_s']:.1f}x"
        )
        print(
            f"      client CPU per reply: LarkClient {r['ours_cpu'] / n * 1000:.2f} ms | "
            f"lark-oapi {r['sdk_cpu'] / n * 1000:.2f} ms "
            f"| ratio {r['sdk_cpu'] / r['ours_cpu']:.1f}x"
        )


if __name__ == "__main__":
    main()
