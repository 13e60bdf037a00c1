"""Long-connection mode: the ws thread hands raw envelopes to the main loop's submit()."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
from typing import Any

import pytest

from larkbot.lark.arrival.webhook import Rejected
from larkbot.lark.arrival.ws import LarkLongConnection
from tests.fakes.lark_events import envelope

# lark-oapi's own ping loop logs through the deprecated `logger.warn` once a socket is closed.
pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")
PAYLOAD_ENV = envelope("im.message.receive_v1", {"message": {}})
PAYLOAD = json.dumps(PAYLOAD_ENV).encode()


class Recorder:
    """A submit() that records what arrived and on which thread."""

    def __init__(self, answer: Any = None, delay: float = 0.0) -> None:
        self.received: list[dict[str, Any]] = []
        self.threads: set[int] = set()
        self.answer = answer
        self.delay = delay
        self.arrived = asyncio.Event()

    async def __call__(self, env: dict[str, Any]) -> Any:
        self.threads.add(threading.get_ident())
        if self.delay:
            await asyncio.sleep(self.delay)  # simulates a slow pipeline, not synchronisation
        self.received.append(env)
        self.arrived.set()
        return self.answer


async def test_injected_event_reaches_submit_on_the_main_loop() -> None:
    submit = Recorder(answer={"toast": {"type": "info", "content": "ok"}})
    loop = asyncio.get_running_loop()  # start() would record it; here no thread is started
    conn = LarkLongConnection("cli_test", "secret", "http://127.0.0.1:1", submit, loop=loop)
    env = envelope("card.action.trigger", {"action": {"value": {"k": 1}}})
    ack = await asyncio.to_thread(conn.handle_payload, json.dumps(env).encode())
    del env["header"]["token"]  # stripped, exactly as on the webhook path
    assert submit.received == [env]
    assert submit.threads == {threading.get_ident()}
    assert ack == {"toast": {"type": "info", "content": "ok"}}


async def test_slow_or_failing_submit_is_reported_to_the_ws_client() -> None:
    loop = asyncio.get_running_loop()
    conn = LarkLongConnection(
        "a", "b", "http://x", Recorder(delay=1.0), loop=loop, ack_timeout=0.05
    )
    with pytest.raises(TimeoutError):
        await asyncio.to_thread(conn.handle_payload, PAYLOAD)

    async def broken(env: dict[str, Any]) -> None:
        raise RuntimeError("queue full")

    conn = LarkLongConnection("a", "b", "http://x", broken, loop=loop)
    with pytest.raises(RuntimeError, match="queue full"):
        await asyncio.to_thread(conn.handle_payload, PAYLOAD)
    for bad in (b"[1]", b"{}", b"not json"):
        with pytest.raises(Rejected):
            await asyncio.to_thread(conn.handle_payload, bad)


async def test_real_sdk_client_in_its_thread_against_fake_gateway() -> None:
    from tests.fakes.lark_ws import FakeLarkWS

    submit = Recorder(answer={"toast": {"type": "success", "content": "done"}})
    async with FakeLarkWS() as gateway:
        conn = LarkLongConnection("cli_test", "secret", gateway.domain, submit)
        conn.start()
        try:
            await gateway.wait_connected(timeout=20)
            env = envelope("im.message.receive_v1", {"message": {"message_id": "om_1"}})
            ack = await gateway.push_event(env)
            del env["header"]["token"]
            assert ack["code"] == 200 and submit.received == [env]
            assert submit.threads == {threading.get_ident()}
            assert conn.state == "connected"

            await gateway.drop()  # the SDK reconnects on its own (interval 1 s, no jitter)
            await gateway.wait_connected(timeout=10)
            card = envelope("card.action.trigger", {"action": {"value": {}}})
            ack = await gateway.push_event(card)
            assert ack["code"] == 200 and ack.get("data")  # the toast, base64 in the ACK
            assert gateway.connections == 2 and len(submit.received) == 2
        finally:
            await conn.aclose(timeout=5)
        assert conn.state == "stopped"
        assert not conn.running


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """ERROR records so far, once tasks nobody awaited are freed (asyncio reports them then)."""
    gc.collect()
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


async def test_stop_right_after_start_ends_the_thread(caplog: pytest.LogCaptureFixture) -> None:
    from tests.fakes.lark_ws import FakeLarkWS

    async with FakeLarkWS() as gateway:
        conn = LarkLongConnection("cli_test", "secret", gateway.domain, Recorder())
        conn.start()
        with caplog.at_level(logging.WARNING):
            await conn.aclose(timeout=10)  # often while the SDK is still connecting
            assert errors(caplog) == []
        assert not conn.running and conn.state == "stopped"


async def test_a_clean_stop_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    from tests.fakes.lark_ws import FakeLarkWS

    async with FakeLarkWS() as gateway:
        conn = LarkLongConnection("cli_test", "secret", gateway.domain, Recorder())
        conn.start()
        try:
            await gateway.wait_connected(timeout=20)
            assert (await gateway.push_event(PAYLOAD_ENV))["code"] == 200
        finally:
            with caplog.at_level(logging.WARNING):
                await conn.aclose(timeout=5)
                # every deploy stops serve: an ERROR here (the SDK's "receive message loop
                # exit", asyncio's "Task exception was never retrieved") pages whoever alerts
                assert errors(caplog) == []
    assert conn.state == "stopped"
