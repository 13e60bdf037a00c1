"""One soak run: three `serve` replicas, Lark-like senders, chaos, then the books are checked.

Lark's side is played by `Sender`: every event is encrypted and signed like Lark's, posted to
the proxy, and redelivered (fresh signature, same event) until a replica answers 200, as Lark
does. Each message's reply is looked up at the fake Lark Open Platform by `reply_to`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from bench.soak_approvals import ApprovalBooks, approvals, victim
from bench.soak_jobs import JobTicker
from bench.soak_plan import SoakPlan, SoakResult
from bench.soak_rig import (
    MESSAGE,
    PIN,
    Proxy,
    Redis,
    Replica,
    StampedLark,
    free_port,
    replica_config,
)
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.lark_harness import message_event, seal

TOKEN = re.compile(r"soak-(m\d+|a\d+|job\d+)")
LARK_TIMEOUT = 3.0  # Lark waits this long for the 200, then redelivers
REDELIVER_AFTER = 0.5  # compressed from Lark's schedule (15 s, 5 min, ...): same behaviour


class Sender:
    """Lark's delivery: post until 200, counting every answer that was not one."""

    def __init__(self, http: aiohttp.ClientSession, proxy: Proxy, give_up: float) -> None:
        self.http, self.proxy, self.give_up = http, proxy, give_up
        self.first_sent: dict[str, float] = {}
        self.event_ids: dict[str, str] = {}
        self.refused: Counter[str] = Counter()
        self.lost: list[str] = []

    async def deliver(self, envelope: dict[str, Any], pin: int | None = None) -> None:
        """Post (re-sealed each attempt) until a 200 or `give_up` seconds have passed."""
        mid = envelope["event"]["message"]["message_id"]
        self.first_sent.setdefault(mid, time.monotonic())
        self.event_ids[mid] = envelope["header"]["event_id"]
        deadline = time.monotonic() + self.give_up
        timeout = aiohttp.ClientTimeout(total=LARK_TIMEOUT)
        while time.monotonic() < deadline:
            body, headers = seal(envelope)
            headers[MESSAGE] = mid
            if pin is not None:
                headers[PIN] = str(pin)
                pin = None  # a retry goes wherever the balancer sends it
            try:
                url = f"{self.proxy.url}/lark/events"
                async with self.http.post(url, data=body, headers=headers, timeout=timeout) as r:
                    await r.read()
                    if r.status == 200:
                        return
                    self.refused[str(r.status)] += 1
            except (aiohttp.ClientError, TimeoutError) as err:
                self.refused[type(err).__name__] += 1
            await asyncio.sleep(REDELIVER_AFTER)  # Lark's back-off before it redelivers
        self.lost.append(mid)


class Soak:
    """Runs one `SoakPlan` against fresh replicas; `run()` returns the result."""

    def __init__(self, plan: SoakPlan, pg_url: str, root: Path) -> None:
        self.plan, self.pg_url, self.root = plan, pg_url, root
        self.lark = StampedLark()
        self.llms = [FakeLLM() for _ in range(3)]
        self.asked: list[list[tuple[str, float]]] = [[], [], []]  # per replica: (token, when)
        self.redis = Redis(root)
        self.replicas: list[Replica] = []
        self.marks: dict[str, float] = {}
        self.victim = -1  # the replica the kill -9 hit
        self.approval_books = ApprovalBooks()

    def _responder(self, index: int) -> Callable[[dict[str, Any]], Reply]:
        def respond(body: dict[str, Any]) -> Reply:
            messages = body.get("messages", [])
            users = [m for m in messages if m.get("role") == "user"]
            found = TOKEN.search(json.dumps(users[-1:], ensure_ascii=False))
            token = found.group(1) if found else "?"
            self.asked[index].append((token, time.monotonic()))
            delay = self.plan.llm_delay
            if token.startswith("a") and messages and messages[-1].get("role") != "tool":
                command = f"rm -rf {victim(self.root, int(token[1:]))}"  # needs an approval
                return Reply(tool_calls=[FakeToolCall("shell", {"command": command})], delay=delay)
            return Reply(text=f"answer to {token}", delay=delay)

        return respond

    async def run(self) -> SoakResult:
        """Start everything, send, inject the faults, wait (bounded) and check."""
        started = time.monotonic()
        async with self.lark, self.llms[0], self.llms[1], self.llms[2]:
            for i, llm in enumerate(self.llms):
                llm.responder = self._responder(i)
            await self.redis.start()
            proxy = None
            try:
                for i in range(3):
                    port = free_port()
                    cfg = replica_config(
                        port, self.lark.domain, self.llms[i].base_url, self.pg_url, self.redis.url
                    )
                    self.replicas.append(Replica(self.root, i, cfg, port))
                async with aiohttp.ClientSession() as http:
                    for r in self.replicas:  # all at once, like `docker compose --scale 3`
                        await r.start()
                    await asyncio.gather(*(r.ready(http) for r in self.replicas))
                    proxy = Proxy(self.replicas)
                    await proxy.start()
                    result = await self._drive(http, proxy)
            finally:
                for r in self.replicas:
                    await r.stop()
                if proxy is not None:
                    await proxy.close()
                await self.redis.stop()
        result.wall_seconds = time.monotonic() - started
        return result

    async def _drive(self, http: aiohttp.ClientSession, proxy: Proxy) -> SoakResult:
        plan = self.plan
        sender = Sender(http, proxy, give_up=plan.settle_seconds)
        ticker = JobTicker(self.pg_url, self.lark, plan.jobs, plan.tick_pause)
        await ticker.start()
        try:
            ticking = asyncio.create_task(ticker.run())
            await self._send_all(sender)
            if plan.approvals:  # after the faults: the wake-up must work after Redis came back
                asking = Sender(sender.http, proxy, give_up=plan.settle_seconds)
                self.approval_books = await approvals(self, asking, proxy, plan.approvals)
            ticker.stop_after_current()
            await self._settle(sender, plan.settle_seconds)
            await asyncio.wait_for(ticking, plan.settle_seconds)
            await self._quiet()
        finally:
            await ticker.close()
        return self._books(sender, ticker, proxy)

    async def _send_all(self, sender: Sender) -> None:
        plan = self.plan
        every = max(1, plan.events // max(1, plan.redelivered)) if plan.redelivered else 0
        chaos = {
            int(plan.events * plan.kill_at): self._kill,
            int(plan.events * plan.redis_at): self._redis,
        }
        pending: set[asyncio.Task[None]] = set()
        t0 = time.monotonic()
        for i in range(plan.events):
            if i in chaos:
                pending.add(asyncio.create_task(chaos[i]()))
            await asyncio.sleep(max(0.0, t0 + i / plan.rate - time.monotonic()))  # open loop
            env = message_event(f"soak-m{i} please", chat_id=f"oc_soak_{i % plan.chats}",
                                message_id=f"om_soak_{i}")  # fmt: skip
            copies = 4 if every and i % every == every // 2 else 1
            for c in range(copies):  # the copies pinned to different replicas, all at once
                pin = (i + c) % 3 if copies > 1 else None
                pending.add(asyncio.create_task(sender.deliver(env, pin)))
            pending = {t for t in pending if not t.done()}
        await asyncio.gather(*pending)

    async def _kill(self) -> None:
        """kill -9 the victim right after its model got a request (so a turn is in flight); the
        leader right after a scheduled job's request (so a job run is in flight)."""
        leader = self.plan.victim == "leader"
        victim = next((r for r in self.replicas if r.leads() == leader), self.replicas[-1])
        self.victim = victim.index
        asked = self.asked[victim.index]
        seen = len(asked)

        def fresh() -> bool:
            return any(leader <= t.startswith("job") for t, _ in asked[seen:])

        async with asyncio.timeout(60):
            while not fresh():
                await asyncio.sleep(0.005)  # poll: a fresh model request at the victim
        await victim.kill9()
        self.marks["killed"] = time.monotonic()
        await asyncio.sleep(self.plan.restart_after)  # it stays down this long
        await victim.start()
        async with aiohttp.ClientSession() as http:
            await victim.ready(http)
        self.marks["restarted"] = time.monotonic()

    async def _redis(self) -> None:
        self.marks["redis_down"] = time.monotonic()
        await self.redis.restart(self.plan.redis_down)
        self.marks["redis_up"] = time.monotonic()

    async def _settle(self, sender: Sender, bound: float) -> None:
        want = set(sender.first_sent)
        with contextlib.suppress(TimeoutError):  # the books below name what is missing
            await self.lark.wait_for(lambda: want <= self.lark.arrivals.keys(), timeout=bound)

    async def _quiet(self) -> None:
        """Until no claim is unfinished anywhere (nothing can still re-run), bounded."""
        import redis.asyncio as redis

        client: Any = redis.from_url(self.redis.url)
        try:
            async with asyncio.timeout(30):
                while await client.zcard("larkbot:inbound-pending"):
                    await asyncio.sleep(0.2)  # poll the shared pending index
        except TimeoutError:
            pass
        finally:
            await client.aclose()
        await asyncio.sleep(2 * self.plan.llm_delay)  # a last delivery in flight lands

    def _books(self, sender: Sender, ticker: JobTicker, proxy: Proxy) -> SoakResult:
        from bench.soak_books import check

        return check(self, sender, ticker, proxy)
