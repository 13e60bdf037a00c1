"""The HTTP surface of serve: challenge, refusals, 1,000 hostile bodies, healthz and drain."""

from __future__ import annotations

import base64
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from larkbot.lark.arrival import crypto
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import ENCRYPT_KEY, TOKEN, Served, message_event, seal, settings_for


async def test_challenge_plain_and_encrypted(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    challenge = {"challenge": "c-123", "token": TOKEN, "type": "url_verification"}
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        body = json.dumps({"encrypt": crypto.encrypt(json.dumps(challenge), ENCRYPT_KEY)})
        assert await s.post_raw(body.encode()) == (200, {"challenge": "c-123"})
        assert (await s.post_raw(json.dumps({**challenge, "token": "wrong"}).encode()))[0] == 403


async def test_refused_requests_never_reach_the_model(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        body, headers = seal(message_event("hi"))
        bad_sig = {**headers, "X-Lark-Signature": "0" * 64}
        assert (await s.post_raw(body, bad_sig))[0] == 401
        stale = dict(headers, **{"X-Lark-Request-Timestamp": str(int(time.time()) - 3600)})
        stale["X-Lark-Signature"] = crypto.signature(
            stale["X-Lark-Request-Timestamp"], stale["X-Lark-Request-Nonce"], ENCRYPT_KEY, body
        )
        assert (await s.post_raw(body, stale))[0] == 401
        wrong_token = message_event("hi")
        wrong_token["header"]["token"] = "nope"
        assert (await s.post_event(wrong_token))[0] == 403
        assert (await s.post_raw(b"x" * (1024 * 1024 + 1)))[0] == 413
        unknown = message_event("hi")
        unknown["header"]["event_type"] = "im.chat.updated_v1"
        assert (await s.post_event(unknown))[0] == 200  # unknown event types: ignored
        assert await s.app.idle(0)  # nothing was queued
    assert fake_llm.requests == [] and fake_lark.sent == []


def _hostile_bodies(rng: random.Random) -> list[tuple[bytes, dict[str, str]]]:
    """Random bytes, broken JSON, wrong shapes, bad crypto, and validly sealed nonsense."""

    def sealed(obj: Any) -> tuple[bytes, dict[str, str]]:
        return seal(json.dumps(obj).encode())

    shapes: list[Any] = [
        None,
        1,
        "s",
        [],
        {},
        {"schema": "2.0"},
        {"schema": "2.0", "header": []},
        {
            "schema": "2.0",
            "header": {"event_id": "e", "event_type": "im.message.receive_v1"},
            "event": {"message": {"content": 5, "mentions": "x"}, "sender": []},
        },
    ]
    out: list[tuple[bytes, dict[str, str]]] = []
    for i in range(1000):
        kind = i % 8
        if kind == 0:
            out.append((rng.randbytes(rng.randint(0, 300)), {}))
        elif kind == 1:
            out.append((json.dumps(rng.choice(shapes)).encode()[: rng.randint(0, 60)], {}))
        elif kind == 2:
            out.append(
                (json.dumps({"encrypt": base64.b64encode(rng.randbytes(48)).decode()}).encode(), {})
            )
        elif kind == 3:
            out.append((json.dumps({"encrypt": "%%%not base64"}).encode(), {}))
        elif kind == 4:
            body, headers = seal(message_event("x"))
            headers["X-Lark-Request-Timestamp"] = rng.choice(["", "abc", "-1", "9" * 30])
            out.append((body, headers))
        elif kind == 5:
            out.append(sealed(rng.choice(shapes)))
        elif kind == 6:
            event = message_event("x", chat_type=rng.choice(["group", "p2p", "", "weird"]))
            event["event"]["message"]["message_type"] = rng.choice(
                ["post", "image", "??", "merge_forward"]
            )
            event["event"]["message"]["content"] = rng.choice(["{", "[]", '{"content": 1}', "null"])
            event["event"]["message"]["chat_type"] = "group"  # no mention: dropped by policy
            out.append(sealed(event))
        else:
            out.append(
                (json.dumps({"type": "url_verification", "challenge": rng.random()}).encode(), {})
            )
    return out


async def test_thousand_hostile_bodies_no_5xx(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    rng = random.Random(1234)
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        statuses: dict[int, int] = {}
        for body, headers in _hostile_bodies(rng):
            status, _ = await s.post_raw(body, headers)
            statuses[status] = statuses.get(status, 0) + 1
        assert not [code for code in statuses if code >= 500], statuses
        assert len(statuses) >= 3  # the generator really exercised different refusals
        async with s.http.get(s.url("/healthz")) as resp:  # type: ignore[union-attr]
            assert resp.status == 200
    assert fake_llm.requests == []


async def test_healthz_and_drain(home: Path, fake_lark: FakeLark, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("done before shutdown", delay=0.3)
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert s.http is not None
        async with s.http.get(s.url("/healthz")) as resp:
            assert (resp.status, await resp.json()) == (200, {"status": "ok"})
        assert (await s.post_event(message_event("quick")))[0] == 200
        assert await s.app.drain(5)  # what SIGTERM does: stop taking events, finish in-flight
        async with s.http.get(s.url("/healthz")) as resp:
            assert resp.status == 503
        assert (await s.post_event(message_event("too late")))[0] == 503
    assert fake_lark.texts() == ["done before shutdown"]


async def test_failed_start_leaves_nothing_running(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    """A part failing late (serve's Xvfb, after the scheduler) closes everything started before."""
    import asyncio

    from larkbot.app import App
    from larkbot.errors import ConfigError

    before = set(asyncio.all_tasks())
    desktop = {"enabled": True, "start_xvfb": True, "display": "not-a-display"}
    app = App(settings_for(home, fake_lark.domain, fake_llm.base_url, computer_use=desktop))
    with pytest.raises(ConfigError, match=r"computer_use\.start_xvfb"):
        await app.start()
    for _ in range(50):
        await asyncio.sleep(0)
    leftover = [t for t in asyncio.all_tasks() - before if not t.done()]
    assert leftover == [asyncio.current_task()] or leftover == []
    assert not app.ready
    with pytest.raises(AssertionError):
        app.core  # noqa: B018  (no half-built parts stay reachable)
    await app.stop()  # a no-op on an App that never started


async def test_trickling_body_is_cut_off_with_408(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    """Regression: a sender trickling its body held a handler for as long as it liked."""
    import asyncio

    settings = settings_for(
        home, fake_lark.domain, fake_llm.base_url, server={"body_read_seconds": 0.3}
    )
    async with Served(settings) as s:
        assert s.server is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", s.server.port)
        writer.write(
            b"POST /lark/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"sch'
        )
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 30)
        writer.close()
        assert status_line.split()[1] == b"408"
        assert (await s.post_raw(b"{}"))[0] == 403  # the server is still answering
