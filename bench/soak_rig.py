"""The soak's moving parts: `larkbot serve` replicas, a restartable Redis, a round-robin proxy.

Everything runs on 127.0.0.1. Each replica is a real `larkbot serve` subprocess with its own
home and port; the proxy plays the load balancer in front of them (round-robin, or pinned to
one replica with the `X-Soak-Replica` header, which is how a redelivery reaches a different
replica than the first copy); `StampedLark` is the fake Lark Open Platform that also notes when
each message arrived, so latency is measured where the user would see the reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.lark_server import FakeLark
from tests.lark_harness import ENCRYPT_KEY, OWNER, TOKEN
from tests.processes import free_port

PIN = "X-Soak-Replica"
MESSAGE = "X-Soak-Message"  # which message a request carries (the body is encrypted)
READY_SECONDS = 120.0  # bounded; a cold `serve` start on 2 busy cores can take tens of seconds


class StampedLark(FakeLark):
    """FakeLark that notes when each message was created, by what it answers (monotonic s).

    `arrivals[key]`: one time per message created, keyed by the message it replies to, or by
    the chat it was sent to when it is not a reply (a scheduled job's result).
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.arrivals: dict[str, list[float]] = {}
        self._indexed = 0

    async def notify(self) -> None:
        """Index the messages created since the last call, then wake waiters."""
        now = time.monotonic()
        for msg in self.sent[self._indexed :]:
            key = str(msg.get("reply_to") or msg.get("receive_id") or "")
            self.arrivals.setdefault(key, []).append(now)
        self._indexed = len(self.sent)
        await super().notify()


class Redis:
    """A redis-server with AOF persistence (as docker-compose.yml runs it) that can restart."""

    def __init__(self, home: Path) -> None:
        self.dir = home / "redis"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start on the same port and data directory; returns once it accepts connections."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes"]
        self.proc = await asyncio.create_subprocess_exec(
            binary, *args, "--dir", str(self.dir), stdout=asyncio.subprocess.PIPE
        )
        assert self.proc.stdout is not None
        async with asyncio.timeout(15):
            while line := await self.proc.stdout.readline():
                if b"ready to accept connections" in line.lower():
                    break
            else:
                raise RuntimeError("redis-server exited before it was ready")
        self._reader = asyncio.create_task(self._drain(self.proc.stdout))  # never block redis

    @staticmethod
    async def _drain(stream: asyncio.StreamReader) -> None:
        while await stream.read(65536):
            pass

    async def stop(self) -> None:
        """SIGTERM (redis writes its AOF and exits), bounded; kill when it hangs."""
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def restart(self, down_seconds: float) -> float:
        """Stop, stay down `down_seconds`, start again; returns how long it was unreachable."""
        started = time.monotonic()
        await self.stop()
        await asyncio.sleep(down_seconds)  # the outage itself, not a synchronisation
        await self.start()
        return time.monotonic() - started


def replica_config(port: int, lark: str, llm: str, pg_url: str, redis_url: str) -> str:
    """config.yaml of one replica: the fakes, the shared stores, short claim and job leases."""
    return (
        f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: 5}}\n"
        f"lark: {{app_id: cli_test, app_secret: secret, encrypt_key: '{ENCRYPT_KEY}',\n"
        f"  verification_token: {TOKEN}, domain: '{lark}', streaming: false,\n"
        "  claim_lease_seconds: 10}\n"
        "scheduler: {lease_seconds: 10, poll_seconds: 2}\n"
        f"owner: {{open_ids: [{OWNER}]}}\n"
        f"llm: {{base_url: '{llm}', api_key: sk-test, max_retries: 0}}\n"
        f"storage: {{url: '{pg_url}', redis_url: '{redis_url}'}}\n"
        "web: {enabled: false}\n"
        "logging: {level: info, format: json}\n"
    )


class Replica:
    """One `larkbot serve` process in its own home, on the shared PostgreSQL and Redis."""

    def __init__(self, root: Path, index: int, config: str, port: int) -> None:
        self.index = index
        self.home = root / f"replica{index}"
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        (self.home / "config.yaml").write_text(config)
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0  # 1 after the first start, 2 after a restart

    @property
    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> None:
        """Spawn `python -m larkbot serve` (logs appended to serve.log in its home)."""
        env = {**os.environ, "LARKBOT_HOME": str(self.home)}
        for name in ("LARKBOT_STORAGE_URL", "REDIS_URL", "LARK_DOMAIN", "LLM_BASE_URL"):
            env.pop(name, None)  # the config file says where everything is
        config = str(self.home / "config.yaml")
        self.starts += 1
        with self.log.open("wb") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "larkbot", "serve", "--config", config,
                env=env, stdout=log, stderr=log,
            )  # fmt: skip

    @property
    def log(self) -> Path:
        """The current run's log (serve1.log, then serve2.log after a restart, ...)."""
        return self.home / f"serve{self.starts}.log"

    async def ready(self, http: aiohttp.ClientSession, timeout: float = READY_SECONDS) -> None:
        """Poll /healthz until 200; fail at once if the process exits, else after `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with http.get(f"{self.base}/healthz") as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.1)  # poll interval of a bounded readiness wait
        tail = self.log.read_text(errors="replace")[-3000:]
        code = self.proc.returncode if self.proc else None
        raise RuntimeError(f"replica {self.index} not healthy (exit {code}):\n{tail}")

    async def kill9(self) -> None:
        """SIGKILL: no drain, no lease release, like a crashed host."""
        if self.proc is not None and self.alive:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()

    async def stop(self) -> None:
        """SIGTERM (drain), bounded; SIGKILL when it hangs."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    def log_events(self, name: str) -> int:
        """How many JSON log lines of this event name the replica wrote (all its runs)."""
        logs = sorted(self.home.glob("serve*.log"))
        return sum(f.read_text(errors="replace").count(f'"event": "{name}"') for f in logs)

    def leads(self) -> bool:
        """Whether this run holds the scheduler lease now (by its last leadership log line)."""
        state = False
        for line in self.log.read_text(errors="replace").splitlines():
            if '"event": "scheduler_leader"' in line:
                state = True
            elif '"event": "scheduler_lost_lease"' in line:
                state = False
        return state


class Proxy:
    """The load balancer: round-robin over the replicas, 502 when the chosen one is down."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self._next = itertools.cycle(range(len(replicas)))
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.url = ""
        self.forwarded = [0] * len(replicas)
        self.acked: dict[str, list[tuple[int, float]]] = {}  # message id → (replica, when)

    async def start(self) -> None:
        """Listen on a free loopback port; sets `url`."""
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        app = web.Application()
        app.router.add_post("/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    async def close(self) -> None:
        """Stop listening and close the backend connections."""
        if self._runner is not None:
            await self._runner.cleanup()
        if self._http is not None:
            await self._http.close()

    async def _forward(self, request: web.Request) -> web.Response:
        pinned = request.headers.get(PIN)
        index = int(pinned) if pinned is not None else next(self._next)
        target = self.replicas[index]
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower().startswith("x-lark")}
        headers["Content-Type"] = request.headers.get("Content-Type", "application/json")
        assert self._http is not None
        try:
            async with self._http.post(
                f"{target.base}/{request.match_info['path']}", data=body, headers=headers
            ) as resp:
                payload = await resp.read()
                self.forwarded[index] += 1
                if resp.status == 200 and MESSAGE in request.headers:
                    self.acked.setdefault(request.headers[MESSAGE], []).append(
                        (index, time.monotonic())
                    )
                return web.Response(status=resp.status, body=payload, headers=_json_type())
        except (aiohttp.ClientError, TimeoutError) as err:
            return web.Response(status=502, text=f"replica {index}: {type(err).__name__}")


def _json_type() -> dict[str, Any]:
    return {"Content-Type": "application/json"}
