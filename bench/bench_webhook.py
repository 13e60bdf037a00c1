"""Webhook ack latency (p50/p99) and sustained events/s: larkbot vs lark-oapi's dispatcher.

Both servers run on 127.0.0.1 in this process and receive the same encrypted, signed
`im.message.receive_v1` events from a lean load generator (`bench/loadgen.py`). larkbot is served
as `larkbot serve` serves it (`open_site`) and its path is the real one: verification chain,
normalise, the journal claim committed (in a group) before the 200, then a turn that asks an
instant fake model and replies to a fake Lark — every event must get exactly one reply. The
baseline is lark-oapi 1.7.5's `EventDispatcherHandler.do()` behind a minimal aiohttp handler whose
event callback only counts (no dedupe, no storage, no reply).

This machine's speed drifts by a factor of two within seconds (a shared 2-core VM), so one burst
each says little. The bursts alternate, ROUNDS times: one to a second lark-oapi server (it wakes
the machine after the pause before it), lark-oapi and larkbot back to back, the two lark-oapi
servers back to back, then larkbot's turns all answered. Those turns wait until the round's last
burst ends, as they wait during larkbot's own, so their work never lands in a lark-oapi burst.
Each pair's order flips every round: between two equal servers the later burst of a pair ran
2-3 % faster, an edge larkbot always had while its burst came last. The events/s ratio is the
median round's larkbot/lark-oapi ratio (one stalled burst moves a total by 10 %; all bursts
together are printed too); lark-oapi/second lark-oapi, paired the same way in the same rounds,
shows the method's noise. Targets: durable ack p99 <= 5 ms and sustained events/s >= 1.0x the
baseline's, in the same run. A local PostgreSQL gets a core of its own for its target run, as a
database shared by replicas has a host of its own (`bench/placement.py` says why); a second run
with it sharing the cores is printed beside it, with no target.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from bench.loadgen import LoadGenerator, build_post
from bench.preemptions import Preemptions

# One at a time, for the ack latencies. Of 100, p99 was the second-slowest event, after the first
# (which opens the claims' connection): one stray stall of the machine was the figure.
SEQUENTIAL = 300
# Every larkbot event is answered, and Lark allows an app 50 replies a second and 1,000 a minute:
# 1,900 events take about 85 s. More rounds, not longer bursts: each round is paired, so drift
# cancels.
ROUNDS = 16
BURST = 100  # events per burst
CONCURRENCY = 16  # connections busy at once in a burst
DRAIN_SECONDS = 90.0  # one burst's turns, paced: 2 s at 50/s, up to a minute once 1,000/min bind
SHARED = "PostgreSQL on the same cores as this process (no target)"


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


def _fakes_process(conn: Any) -> None:
    """Child process: FakeLark + an instant FakeLLM, so they do not share our event loop."""
    from collections import Counter

    from tests.fakes.lark_server import FakeLark
    from tests.fakes.llm import FakeLLM, Reply

    async def run() -> None:
        async with FakeLark() as fake_lark, FakeLLM() as llm:
            llm.responder = lambda body: Reply(text="ok")
            conn.send((fake_lark.domain, llm.base_url))
            while not await asyncio.to_thread(conn.poll, 0.2):
                pass
            conn.recv()
            conn.send(dict(Counter(m["reply_to"] for m in fake_lark.sent)))

    asyncio.run(run())


def _requests(url: str, first: int, count: int) -> list[bytes]:
    """`count` events for `url`, sealed and signed now (fresh timestamps), as request bytes."""
    from tests.lark_harness import message_event, seal

    out = []
    for i in range(first, first + count):
        event = message_event(f"hi {i}", chat_id=f"oc_{i % 50}", message_id=f"om_b{i}")
        out.append(build_post(url, *seal(event)))
    return out


def _percentiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[int(len(ordered) * 0.99) - 1] * 1000,
    }


class _Side:
    """One server's load generator, the next event number for it, and its burst totals."""

    def __init__(
        self,
        url: str,
        first: int,
        gen: LoadGenerator | None = None,
        preemptions: Preemptions | None = None,
    ) -> None:
        self.url = url
        self.preemptions = preemptions  # counted for larkbot's bursts
        self.next = first
        self.gen = gen or LoadGenerator(url, CONCURRENCY)
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.events = 0
        self.rates: list[float] = []

    def take(self, count: int) -> list[bytes]:
        """The next `count` events' requests."""
        self.next += count
        return _requests(self.url, self.next - count, count)

    async def burst(self) -> None:
        """One burst of BURST events; its time and this process's CPU time are added up."""
        requests = self.take(BURST)
        if self.preemptions:
            self.preemptions.start()
        cpu = time.process_time()
        seconds = await self.gen.burst(requests)
        self.cpu_seconds += time.process_time() - cpu
        if self.preemptions:
            self.preemptions.stop()
        self.seconds += seconds
        self.events += BURST
        self.rates.append(BURST / seconds)

    def figures(self) -> dict[str, float]:
        """Events/s: the median burst's and all bursts' together; CPU µs per event (this process:
        server and load generator)."""
        return {
            "events_per_s": statistics.median(self.rates),
            "together_per_s": self.events / self.seconds,
            "cpu_us": self.cpu_seconds / self.events * 1e6,
        }


async def _pair(first: _Side, second: _Side, flip: bool) -> None:
    """A burst to each, back to back; `flip` reverses the order (the later one runs faster)."""
    if flip:
        first, second = second, first
    await first.burst()
    await second.burst()


def _pair_ratios(ours: _Side, theirs: _Side) -> list[float]:
    return [a / b for a, b in zip(ours.rates, theirs.rates, strict=True)]


@contextlib.asynccontextmanager
async def _served(settings: Any) -> AsyncIterator[tuple[Any, str]]:
    """larkbot as `larkbot serve` runs it (serve's runner and guarded site); its events URL."""
    from larkbot.app import App
    from larkbot.server import open_site

    app = App(settings)
    await app.start()
    try:
        runner, site = await open_site(app, "127.0.0.1", 0)
        try:
            yield app, f"http://127.0.0.1:{site.port}/lark/events"
        finally:
            await runner.cleanup()
    finally:
        await app.stop()


async def _larkbot(
    lark_domain: str, llm_url: str, storage_url: str, offset: int, baselines: tuple[str, str]
) -> dict[str, Any]:
    """One larkbot run on a fresh home (and database), its bursts alternating with lark-oapi's.

    Each round: a burst to a second lark-oapi server (it wakes the machine after the pause),
    lark-oapi and larkbot, the two lark-oapi servers, then larkbot's turns all answered. Each
    pair's order flips every round; the lark-oapi pair shows how far apart this method puts two
    equal servers (the noise floor).
    """
    from pathlib import Path

    from larkbot.heap import freeze_startup_heap, widen_young_generation
    from tests.lark_harness import settings_for

    home = Path(tempfile.mkdtemp(prefix="larkbot-bench-"))
    os.environ["LARKBOT_HOME"] = str(home)
    storage = {"url": storage_url or f"sqlite:///{home}/larkbot.db"}
    async with _served(settings_for(home, lark_domain, llm_url, storage=storage)) as (app, url):
        freeze_startup_heap()  # as `larkbot serve` does once it is up
        widen_young_generation()  # as `serve` does (lark-oapi, in this process, gains it too)
        dispatcher = app.dispatcher
        preempted = Preemptions()
        ours = _Side(url, offset, preemptions=preempted)
        theirs = _Side(baselines[0], offset)
        twin = _Side(baselines[1], offset)
        # lark-oapi in the noise pair: the same server and connections, its own figures
        theirs_again = _Side(baselines[0], offset + 500_000, theirs.gen)
        async with ours.gen, theirs.gen, twin.gen:
            started = time.perf_counter()
            figures: dict[str, Any] = _percentiles(await ours.gen.one_by_one(ours.take(SEQUENTIAL)))
            drained = await dispatcher.join(DRAIN_SECONDS)
            baseline = _percentiles(await theirs.gen.one_by_one(theirs.take(SEQUENTIAL)))
            claims = app.journal.claims
            before = claims.items, claims.groups  # the one-by-one events commit alone
            for round_number in range(ROUNDS):
                await twin.gen.burst(twin.take(BURST))  # wakes the machine, not measured
                flip = round_number % 2 == 1
                # larkbot's turns wait, as during its burst, until the lark-oapi bursts are over
                with app.ingress.acking():
                    await _pair(ours, theirs, flip)  # back to back: no time to drift
                    await _pair(theirs_again, twin, flip)
                drained = await dispatcher.join(DRAIN_SECONDS) and drained
            figures["all_replied_s"] = time.perf_counter() - started
        figures.update(ours.figures())
        figures["drained"] = drained
        figures["pair_ratios"] = _pair_ratios(ours, theirs)
        figures["noise_ratios"] = _pair_ratios(theirs_again, twin)
        figures["preempted"] = preempted.summary(figures["pair_ratios"])
        items, groups = claims.items - before[0], claims.groups - before[1]
        figures["claims_per_commit"] = items / max(groups, 1)
        figures["deferred_steps"] = app.ingress.deferred_steps
        figures["events"] = ours.next - offset
    return {"ours": figures, "theirs": baseline | theirs.figures()}


async def _run() -> bool:
    import multiprocessing as mp

    from larkbot.logs import configure_logging
    from tests.lark_harness import ENCRYPT_KEY, TOKEN

    configure_logging("error", "json")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_fakes_process, args=(child,), daemon=True)
    proc.start()
    seen: list[str] = []
    runner, baseline_url = await _serve(_baseline_app(ENCRYPT_KEY, TOKEN, seen))
    runner2, twin_url = await _serve(_baseline_app(ENCRYPT_KEY, TOKEN, []))
    baselines = (baseline_url, twin_url)
    runs: dict[str, dict[str, Any]] = {}
    try:
        lark_domain, llm_url = await asyncio.to_thread(parent.recv)
        runs["SQLite"] = await _larkbot(lark_domain, llm_url, "", 0, baselines)
        if os.environ.get("LARKBOT_TEST_PG_URL"):  # the server `make bench` starts
            from bench.placement import local_postmaster, own_core
            from tests.pg import fresh_database

            async with fresh_database() as pg_url:  # created for this run, dropped after it
                with own_core(await local_postmaster(pg_url)) as placement:
                    runs["PostgreSQL"] = await _larkbot(
                        lark_domain, llm_url, pg_url, 1_000_000, baselines
                    )
                runs["PostgreSQL"]["placement"] = placement
            async with fresh_database() as pg_url:
                shared = await _larkbot(lark_domain, llm_url, pg_url, 2_000_000, baselines)
                runs[SHARED] = shared | {"target": False}
        parent.send("report")
        replies: dict[str, int] = await asyncio.to_thread(parent.recv)
    finally:
        await runner2.cleanup()
        await runner.cleanup()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    return _report(runs, replies, len(seen))


def _report(runs: dict[str, dict[str, Any]], replies: dict[str, int], seen: int) -> bool:
    print(
        f"events: {SEQUENTIAL} one by one (latency), then {ROUNDS} rounds of {BURST}-event "
        f"bursts: a second lark-oapi, then lark-oapi and larkbot, then the two lark-oapi (each "
        f"pair's order flips every round), {CONCURRENCY} connections"
    )
    print("instant fake model + fake Lark in a child process; every larkbot event runs a full turn")
    load = os.getloadavg()[0]
    print(f"machine load average {load:.1f} on {os.cpu_count()} cores (targets assume an idle one)")
    print(f"{'':30}{'larkbot':>10}{'lark-oapi':>11}  ratio")
    for name, run in runs.items():
        ours, theirs = run["ours"], run["theirs"]
        pairs = sorted(ours["pair_ratios"])
        ratios = {key: ours[key] / theirs[key] for key in ("p50_ms", "p99_ms", "cpu_us")}
        ratios["events_per_s"] = statistics.median(pairs)
        ratios["together_per_s"] = ours["together_per_s"] / theirs["together_per_s"]
        print(f"{name}" + (f" ({run['placement']})" if "placement" in run else ""))
        for key, label in (
            ("p50_ms", "ack p50 (ms)"),
            ("p99_ms", "ack p99 (ms)"),
            ("events_per_s", "sustained events/s, median"),
            ("together_per_s", "  all bursts together"),
            ("cpu_us", "CPU per event (µs)"),
        ):
            print(f"  {label:28}{ours[key]:10.2f}{theirs[key]:11.2f}  {ratios[key]:.2f}x")
        # process CPU time (threads too) over wall time in the bursts: under 100, the loop waited
        busy = [run["together_per_s"] * run["cpu_us"] / 1e4 for run in (ours, theirs)]
        print(f"  {'CPU / wall time in bursts (%)':28}{busy[0]:10.0f}{busy[1]:11.0f}")
        print(
            f"  the rounds' ratios: {pairs[0]:.2f}x to {pairs[-1]:.2f}x (the median one is the "
            f"ratio above); claims per commit in the bursts {ours['claims_per_commit']:.1f}; "
            f"{ours['deferred_steps']} turn steps waited for acknowledgements"
        )
        print(f"  {ours['preempted']}")
        noise = sorted(ours["noise_ratios"])
        print(
            f"  noise floor, lark-oapi against the second lark-oapi, paired the same way: median "
            f"{statistics.median(noise):.2f}x ({noise[0]:.2f}x to {noise[-1]:.2f}x)"
        )
        print(
            f"  all {ours['events']} replied {ours['all_replied_s']:.1f} s after the first event "
            f"(all done: {ours['drained']})"
        )
    once = sum(1 for n in replies.values() if n == 1)
    expected = sum(run["ours"]["events"] for run in runs.values())
    baseline_events = (SEQUENTIAL + 2 * ROUNDS * BURST) * len(runs)  # its pair, the noise pair
    print(
        f"replies: {sum(replies.values())} for {expected} events, {once} messages answered "
        f"exactly once; baseline handler calls: {seen}/{baseline_events}"
    )
    print("every larkbot 200 waited for its journal claim's commit (durable before the ack);")
    print("replies are paced at Lark's 50 calls/s per app, so the turns finish after the acks.")
    ok = once == expected == sum(replies.values()) and seen == baseline_events
    for name, run in runs.items():
        ours = run["ours"]
        if not run.get("target", True):
            ok = ok and ours["drained"]
            continue
        p99_ok = ours["p99_ms"] <= 5.0
        rate_ok = statistics.median(ours["pair_ratios"]) >= 1.0
        print(
            f"{name} targets: ack p99 <= 5 ms {'met' if p99_ok else 'MISSED'}; "
            f"events/s >= 1.0x lark-oapi (median round) {'met' if rate_ok else 'MISSED'}"
        )
        ok = ok and p99_ok and rate_ok and ours["drained"]
    return ok


def main() -> None:
    """Run both servers and print the figures; fails when a reply or a target is missing."""
    if not asyncio.run(_run()):
        raise AssertionError("bench_webhook: exactly one reply per event and both targets")


if __name__ == "__main__":
    main()
