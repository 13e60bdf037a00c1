"""HTTP edges of the real `larkbot serve` on loopback: header deadline, connection cap, body budget.

A trickling header is cut after `server.header_timeout_seconds`; past `server.max_connections`
the oldest connection still sending its header makes room for a new one, and when every
connection is past its header the new one is refused, while /healthz keeps answering. Bodies
held before verification share `server.unverified_body_bytes`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from tests.processes import free_port

# One serve process for the module (starting one costs seconds on a loaded machine).
pytestmark = pytest.mark.asyncio(loop_scope="module")

HEADER_TIMEOUT = 1.0
CAP = 12
# A close (or answer) the server owes comes within this: only a broken server reaches it.
CLOSED_WITHIN = 20


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[int]:
    """`larkbot serve` as a process with small limits; yields its port."""
    home = tmp_path_factory.mktemp("serve_home")
    port = free_port()
    config = home / "config.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: 1, "
        f"header_timeout_seconds: {HEADER_TIMEOUT}, max_connections: {CAP}, "
        "idle_timeout_seconds: 30, body_read_seconds: 30, unverified_body_bytes: 1048576}\n"
        "lark: {verification_token: vt, encrypt_key: ek}\n"
        # healthy with no Lark app: the web chat is its interface, the LLM a local one
        "web: {enabled: true}\nllm: {base_url: 'http://127.0.0.1:9/v1'}\n"
        f"storage: {{url: 'sqlite:///{home}/larkbot.db'}}\n"
    )
    env = {**os.environ, "LARKBOT_HOME": str(home)}
    env.pop("LARK_APP_ID", None), env.pop("LARK_APP_SECRET", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "larkbot", "serve", "--config", str(config), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(300):  # readiness, bounded (~30 s on a loaded machine)
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("serve never became healthy")
        yield port
    finally:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _open(port: int, first: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(first)
    await writer.drain()
    return reader, writer


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when the server closes (EOF or reset) within `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(4096):
                pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


async def _healthy(port: int) -> bool:
    async with httpx.AsyncClient(timeout=5) as http:
        return (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200


async def test_a_trickling_header_is_cut_at_the_deadline(served: int) -> None:
    reader, writer = await _open(served, b"POST /lark/events HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()

    async def trickle() -> None:
        for n in range(300):  # one header line every 0.2 s: never a whole header (60 s)
            writer.write(f"X-Slow-{n}: a\r\n".encode())
            await asyncio.sleep(0.2)

    task = asyncio.create_task(trickle())
    try:
        assert await _closed_within(reader, HEADER_TIMEOUT + CLOSED_WITHIN)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        writer.close()
    assert time.monotonic() - started < HEADER_TIMEOUT + CLOSED_WITHIN  # not the 60 s trickle
    assert await _healthy(served)


async def test_the_connection_cap_drops_half_open_connections_first(served: int) -> None:
    half_open = [await _open(served, b"GET /healthz HTTP/1.1\r\n") for _ in range(CAP + 8)]
    try:
        assert await _healthy(served)  # room made by dropping the oldest half-open ones
        dropped = [await _closed_within(r, CLOSED_WITHIN) for r, _ in half_open[:8]]
        assert all(dropped)
    finally:
        for _, w in half_open:
            w.close()


async def test_past_the_cap_with_every_header_sent_new_connections_are_refused(
    served: int,
) -> None:
    # Whole headers, bodies still to come: these are requests in progress, never dropped.
    # `Expect: 100-continue`: the server's `100 Continue` says it has parsed that header.
    header = (
        b"POST /lark/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
        b"Expect: 100-continue\r\n\r\n"
    )
    busy = [await _open(served, header) for _ in range(CAP)]
    try:
        for r, _ in busy:  # every header parsed, however long a loaded machine takes
            interim = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), CLOSED_WITHIN)
            assert interim.startswith(b"HTTP/1.1 100"), interim
        reader, writer = await _open(served, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert await _closed_within(reader, CLOSED_WITHIN)
        writer.close()
        assert not any([await _closed_within(r, 0.05) for r, _ in busy])
    finally:
        for _, w in busy:
            w.close()
    for _ in range(50):  # once they close, the server takes connections again (bounded)
        try:
            if await _healthy(served):
                break
        except httpx.TransportError:
            await asyncio.sleep(0.1)
    else:
        raise AssertionError("the server never recovered after the busy connections closed")


async def test_unverified_bodies_share_one_memory_budget(served: int) -> None:
    size = 700 * 1024  # two of these do not fit the smallest budget (1 MB)
    header = f"POST /lark/events HTTP/1.1\r\nHost: x\r\nContent-Length: {size + 1}\r\n\r\n"
    first = await _open(served, header.encode() + b"x" * size)  # the last byte never comes
    try:
        # Refused (503: Lark retries later) once the server holds the first body's bytes;
        # until it has read them, the second is judged on its merits: asked again (bounded).
        deadline = time.monotonic() + CLOSED_WITHIN
        async with httpx.AsyncClient(timeout=CLOSED_WITHIN) as http:
            while True:
                resp = await http.post(
                    f"http://127.0.0.1:{served}/lark/events",
                    content=b"y" * size,
                    headers={"Content-Type": "application/json"},
                )
                if resp.status_code == 503 or time.monotonic() > deadline:
                    break
                assert resp.status_code in (400, 401), resp.status_code
                await asyncio.sleep(0.1)
        assert resp.status_code == 503
    finally:
        first[1].close()
    assert await _closed_within(first[0], CLOSED_WITHIN)
    async with httpx.AsyncClient(timeout=10) as http:  # the held bytes were given back
        for _ in range(50):
            resp = await http.post(f"http://127.0.0.1:{served}/lark/events", content=b"y" * size)
            if resp.status_code != 503:
                break
            await asyncio.sleep(0.1)
    assert resp.status_code in (400, 401)  # judged on its merits: unsigned, refused
