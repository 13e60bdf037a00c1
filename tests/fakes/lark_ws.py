"""FakeLarkWS: Lark's long-connection endpoint on 127.0.0.1, speaking lark-oapi's pbbp2 frames.

`POST /callback/ws/endpoint` answers a `ws://HOST:PORT/ws?device_id=…&service_id=1` URL on the
host it was asked on (reconnect interval 1 s, no jitter); the websocket pushes event frames
(`push_event`) and collects the client's ACK frames. `drop()` closes the socket to exercise
reconnects. `async with FakeLarkWS()` serves these routes on a port of its own (`.domain`);
`FakeLark(gateway=FakeLarkWS())` serves them on FakeLark's port instead, so one `lark.domain`
answers both the REST API and the long connection, as Lark's does.
Importing this module imports lark_oapi (slow, ~3 s): only the long-connection tests use it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from aiohttp import WSMsgType, web
from lark_oapi.ws.pb.pbbp2_pb2 import Frame

DATA, CONTROL = 1, 0


def _frame(method: int, headers: dict[str, str], payload: bytes = b"") -> bytes:
    frame = Frame(SeqID=0, LogID=0, service=1, method=method, payload=payload)
    for key, value in headers.items():
        header = frame.headers.add()
        header.key, header.value = key, value
    return frame.SerializeToString()


class FakeLarkWS:
    """A fake long-connection gateway: `.domain`, `.connections`, `push_event`, `drop`."""

    def __init__(self) -> None:
        self.domain = ""
        self.connections = 0
        self.endpoint_calls = 0
        self._ws: web.WebSocketResponse | None = None
        self._connected = asyncio.Event()
        self._acks: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakeLarkWS:
        app = web.Application()
        self.add_routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.domain = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def add_routes(self, app: web.Application) -> None:
        """Serve the endpoint discovery and the websocket on `app` (before it starts)."""
        app.router.add_post("/callback/ws/endpoint", self._endpoint)
        app.router.add_get("/ws", self._socket)

    async def _endpoint(self, request: web.Request) -> web.Response:
        self.endpoint_calls += 1
        body = await request.json()
        if not body.get("AppID") or not body.get("AppSecret"):
            return web.json_response({"code": 1000040344, "msg": "no credential"})
        url = f"ws://{request.host}/ws?device_id=dev_1&service_id=1"
        config = {"ReconnectCount": -1, "ReconnectInterval": 1, "ReconnectNonce": 0}
        data = {"URL": url, "ClientConfig": {**config, "PingInterval": 120}}
        return web.json_response({"code": 0, "msg": "ok", "data": data})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        self.connections += 1
        self._connected.set()
        async for msg in ws:
            if msg.type != WSMsgType.BINARY:
                continue
            frame = Frame()
            frame.ParseFromString(msg.data)
            headers = {h.key: h.value for h in frame.headers}
            if frame.method == CONTROL:
                await ws.send_bytes(_frame(CONTROL, {"type": "pong"}))
                continue
            future = self._acks.pop(headers.get("message_id", ""), None)
            if future is not None and not future.done():
                future.set_result(json.loads(frame.payload))
        if self._ws is ws:
            self._ws = None
            self._connected.clear()
        return ws

    async def wait_connected(self, timeout: float = 10.0) -> None:
        """Wait (bounded) until a client holds the websocket."""
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def push_event(self, envelope: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """Send one event frame; returns the client's ACK (`{"code": 200, "data": …}`)."""
        await self.wait_connected(timeout)
        assert self._ws is not None
        message_id = f"msg_{next(self._ids)}"
        headers = {"type": "event", "message_id": message_id, "trace_id": "t", "sum": "1"}
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._acks[message_id] = future
        payload = json.dumps(envelope).encode()
        await self._ws.send_bytes(_frame(DATA, {**headers, "seq": "0"}, payload))
        return await asyncio.wait_for(future, timeout)

    async def drop(self) -> None:
        """Close the current websocket (the client should reconnect)."""
        if self._ws is not None:
            self._connected.clear()
            await self._ws.close()
