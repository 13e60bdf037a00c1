"""bench/loadgen.py against a real aiohttp server: every request answered, non-200s refused."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.loadgen import BadResponse, LoadGenerator, build_post


def _counting_server(seen: list[bytes]) -> web.Application:
    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        seen.append(body)
        if body == b"refuse":
            return web.Response(status=503, text="busy")
        if body == b"hang up":
            assert request.transport is not None
            request.transport.close()
        return web.Response(body=b'{"msg":"success"}', content_type="application/json")

    app = web.Application()
    app.router.add_post("/lark/events", echo)
    return app


async def test_a_burst_sends_every_request_once_over_the_kept_connections() -> None:
    seen: list[bytes] = []
    async with TestServer(_counting_server(seen), host="127.0.0.1") as server:
        url = str(server.make_url("/lark/events"))
        requests = [build_post(url, f"event {i}".encode(), {"X-Test": "1"}) for i in range(200)]
        async with LoadGenerator(url, 8) as gen:
            seconds = await gen.burst(requests, within=10)
            latencies = await gen.one_by_one(requests[:5], within=10)
    assert sorted(seen[:200]) == sorted(f"event {i}".encode() for i in range(200))
    assert seen[200:] == [f"event {i}".encode() for i in range(5)]
    assert seconds > 0 and len(latencies) == 5 and all(t > 0 for t in latencies)


async def test_a_response_other_than_200_fails_the_run() -> None:
    async with TestServer(_counting_server([]), host="127.0.0.1") as server:
        url = str(server.make_url("/lark/events"))
        async with LoadGenerator(url, 2) as gen:
            with pytest.raises(BadResponse, match="503"):
                await gen.burst([build_post(url, b"refuse", {})] * 3, within=10)


async def test_a_connection_the_server_closes_fails_the_run_and_the_next() -> None:
    async with TestServer(_counting_server([]), host="127.0.0.1") as server:
        url = str(server.make_url("/lark/events"))
        async with LoadGenerator(url, 1) as gen:
            with pytest.raises(BadResponse, match="connection closed"):
                await gen.burst([build_post(url, b"hang up", {})], within=10)
            with pytest.raises(BadResponse, match="connection closed before the run"):
                await gen.one_by_one([build_post(url, b"event", {})], within=10)


async def test_a_paced_run_sends_each_request_once_at_its_rate() -> None:
    seen: list[bytes] = []
    async with TestServer(_counting_server(seen), host="127.0.0.1") as server:
        url = str(server.make_url("/lark/events"))
        requests = [build_post(url, f"event {i}".encode(), {}) for i in range(20)]
        async with LoadGenerator(url, 4) as gen:
            latencies = await gen.paced(requests, rate=200, within=10)
            assert await gen.burst(requests[:4], within=10) > 0  # the connections are free again
    assert sorted(seen[:20]) == sorted(f"event {i}".encode() for i in range(20))
    assert len(latencies) == 20 and all(t > 0 for t in latencies)
