"""The web API over real HTTP: auth fails closed, a turn's AG-UI events, resume, stop, data API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from larkbot.app import App
from larkbot.http_access import ACCESS, OPEN, gate
from larkbot.server import create_app
from larkbot.web.handlers import WEB_KEY
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import (
    AUTH,
    WEB_TOKEN,
    chat_turn,
    kinds,
    outside_tmp,
    sse_events,
    text_of,
    wait_until,
    web_settings,
)


async def test_every_endpoint_refuses_without_a_valid_token(home: Path, fake_llm: FakeLLM) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        wrong = {"Authorization": "Bearer nope"}
        for method, path in [
            ("POST", "/chat"),
            ("GET", "/api/sessions"),
            ("GET", "/api/sessions/web:x"),
            ("DELETE", "/api/sessions/web:x"),
            ("GET", "/api/schedules"),
            ("DELETE", "/api/schedules/j"),
            ("GET", "/api/schedules/j/runs"),
            ("POST", "/api/consent/cr_x"),
            ("POST", "/api/runs/r_x/stop"),
            ("GET", "/api/runs/r_x/files/0"),
            ("POST", "/api/logout"),
        ]:
            for headers in ({}, wrong, {"Cookie": "larkbot_session=9999999999.forged"}):
                async with s.http.request(method, s.url(path), headers=headers, json={}) as r:
                    assert r.status == 401, (method, path, headers)
        async with s.http.post(s.url("/api/login"), json={"token": "wrong"}) as r:
            assert r.status == 401 and "set-cookie" not in r.headers
        async with s.http.get(s.url("/")) as r:  # the page itself is public, with a strict CSP
            assert r.status == 200 and "script-src 'self'" in r.headers["Content-Security-Policy"]
            assert "Access-Control-Allow-Origin" not in r.headers
        assert fake_llm.requests == []


async def test_login_cookie_and_origin_check(home: Path, fake_llm: FakeLLM) -> None:
    async with (
        Served(web_settings(home, fake_llm.base_url)) as s,
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser,
    ):
        async with browser.post(s.url("/api/login"), json={"token": WEB_TOKEN}) as r:
            assert r.status == 200
            cookie = r.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        async with browser.get(s.url("/api/sessions")) as r:  # the jar sends the cookie
            assert r.status == 200 and (await r.json()) == {"sessions": []}
        origin = f"http://{s.url('/').split('/')[2]}"
        evil = {"Origin": "https://evil.example"}
        async with browser.delete(s.url("/api/sessions/web:x"), headers=evil) as r:
            assert r.status == 403
        async with browser.delete(s.url("/api/sessions/web:x")) as r:  # cookie, no Origin
            assert r.status == 403
        async with browser.delete(s.url("/api/sessions/web:x"), headers={"Origin": origin}) as r:
            assert r.status == 200  # past the guard (deleting is idempotent)
        async with browser.post(s.url("/api/login"), json={"token": "x"}, headers=evil) as r:
            assert r.status == 403  # no login from other sites either


async def test_a_turn_streams_ag_ui_events(home: Path, fake_llm: FakeLLM, tmp_path: Path) -> None:
    work = tmp_path / "work"  # not the bot's own home: listing that is asked every time
    work.mkdir()
    (work / "larkbot.db").write_text("")
    fake_llm.reply_tools(("file_list", {"path": str(work)})).reply_text("Your home has a db.")
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        body = {"message": "what is here?"}
        async with s.http.post(s.url("/chat"), json=body, headers=AUTH) as r:
            assert r.status == 200 and r.headers["Content-Type"] == "text/event-stream"
            got = [e async for e in sse_events(r)]
        events = [e for _, e in got]
        assert kinds(events) == [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            *["TEXT_MESSAGE_CONTENT"] * len(events[6:-2]),
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
        assert text_of(events) == "Your home has a db."
        assert events[1]["toolCallName"] == "file_list" and "larkbot.db" in events[4]["content"]
        run_id = events[0]["runId"]
        assert [i for i, _ in got] == [f"{run_id}:{n}" for n in range(1, len(got) + 1)]
        session = events[0]["threadId"]
        async with s.http.get(s.url(f"/api/sessions/{session}"), headers=AUTH) as r:
            history = (await r.json())["messages"]
        assert history[0] == {"role": "user", "content": "what is here?"}
        assert history[-1]["content"] == "Your home has a db."
        async with s.http.get(s.url("/api/sessions"), headers=AUTH) as r:
            listed = (await r.json())["sessions"]
        assert [(x["id"], x["title"]) for x in listed] == [(session, "what is here?")]


async def test_resume_with_last_event_id_after_the_client_left(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("one two three four five six", text_chunk=3, delay=0.0)
    fake_llm.reply_text("second answer")
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        async with s.http.post(s.url("/chat"), json={"message": "count"}, headers=AUTH) as r:
            first = []
            async for item in sse_events(r):
                first.append(item)
                if item[1]["type"] == "TEXT_MESSAGE_START":
                    break  # the client goes away mid-answer
        web = s.app  # the turn goes on without a client
        last_id = first[-1][0]
        headers = {**AUTH, "Last-Event-ID": last_id}
        async with s.http.post(s.url("/chat"), json={}, headers=headers) as r:
            rest = [e async for e in sse_events(r)]
        assert rest[0][0] == f"{last_id.split(':')[0]}:{int(last_id.split(':')[1]) + 1}"
        events = [e for _, e in first] + [e for _, e in rest]
        assert text_of(events) == "one two three four five six"
        assert events[-1]["type"] == "RUN_FINISHED"
        headers = {**AUTH, "Last-Event-ID": "run_unknown:3"}
        async with s.http.post(s.url("/chat"), json={}, headers=headers) as r:
            assert r.status == 404
        assert web.ready


async def test_stop_cancels_the_turn_and_keeps_the_message(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("too late", delay=5.0)
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        async with s.http.post(s.url("/chat"), json={"message": "slow"}, headers=AUTH) as r:
            events = []
            async for _, event in sse_events(r):
                events.append(event)
                if event["type"] == "RUN_STARTED":
                    await wait_until(lambda: fake_llm.requests)  # the model is being asked
                    stop = s.url(f"/api/runs/{event['runId']}/stop")
                    async with s.http.post(stop, headers=AUTH) as stopped:
                        assert stopped.status == 200
        assert kinds(events) == ["RUN_STARTED", "RUN_FINISHED"]  # stopped is not failed
        assert events[-1]["outcome"] == {"type": "cancelled"}
        session = events[0]["threadId"]
        async with s.http.get(s.url(f"/api/sessions/{session}"), headers=AUTH) as r:
            assert (await r.json())["messages"] == [{"role": "user", "content": "slow"}]


async def test_bad_chat_bodies_are_4xx(home: Path, fake_llm: FakeLLM) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        for body, status in [
            (b"not json", 400),
            (b"[]", 400),
            (b'{"message": ""}', 400),
            (b'{"message": "hi", "session_id": "has space"}', 400),
            (b'{"message": "hi", "session_id": "' + b"x" * 129 + b'"}', 400),
            (b'{"threadId": "t", "runId": "r", "messages": []}', 400),  # no user message
            (
                b'{"threadId": "t", "runId": "r/1", "messages": [{"id": "m", "role": "user", '
                b'"content": "hi"}]}',
                400,
            ),
            (b'{"threadId": "t", "messages": [{"id": "m", "role": "user", "content": "hi"}]}', 400),
            (b'{"message": "' + b"x" * 40_000 + b'"}', 413),
        ]:
            async with s.http.post(s.url("/chat"), data=body, headers=AUTH) as r:
                assert r.status == status, body[:40]
        await asyncio.sleep(0)
        assert fake_llm.requests == []
        assert isinstance(s.http, aiohttp.ClientSession)


async def test_a_tool_file_is_served_to_the_logged_in_user(home: Path, fake_llm: FakeLLM) -> None:
    from PIL import Image

    with outside_tmp() as work:
        png = work / "chart.png"
        Image.new("RGB", (8, 8), "red").save(png)
        fake_llm.reply_tools(("send_file", {"path": str(png), "caption": "the chart"}))
        fake_llm.reply_text("Here it is.")
        async with Served(web_settings(home, fake_llm.base_url)) as s:
            assert s.http is not None
            events = await chat_turn(s.http, s.url(""), "send me the chart")
            files = [e["value"] for e in events if e.get("name") == "attachment"]
            assert [(f["name"], f["kind"], f["caption"]) for f in files] == [
                ("chart.png", "image", "the chart")
            ]
            async with s.http.get(s.url(files[0]["url"])) as r:
                assert r.status == 401
            async with s.http.get(s.url(files[0]["url"]), headers=AUTH) as r:
                assert r.status == 200 and r.headers["Content-Type"] == "image/png"
                assert await r.read() == png.read_bytes()
            async with s.http.get(s.url(files[0]["url"][:-1] + "9"), headers=AUTH) as r:
                assert r.status == 404


async def test_one_turn_at_a_time_per_session(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("slow answer", delay=1.0)
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        body = {"message": "first", "session_id": "web:same"}
        async with s.http.post(s.url("/chat"), json=body, headers=AUTH) as first:
            body["message"] = "second"
            async with s.http.post(s.url("/chat"), json=body, headers=AUTH) as second:
                assert second.status == 409
            assert kinds([e async for _, e in sse_events(first)])[-1] == "RUN_FINISHED"


async def test_an_idle_stream_is_pinged(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("after a pause", delay=1.0)
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None and s.server is not None
        s.server.app[WEB_KEY].ping_seconds = 0.2  # 15 s in `serve`; shortened to keep this fast
        async with s.http.post(s.url("/chat"), json={"message": "hi"}, headers=AUTH) as r:
            lines = [raw.decode().rstrip("\n") async for raw in r.content]
    first_text = next(i for i, line in enumerate(lines) if "TEXT_MESSAGE_CONTENT" in line)
    assert lines[:first_text].count(": ping") >= 2  # while the model thinks
    assert any("RUN_FINISHED" in line for line in lines[first_text:])


async def test_a_failing_model_ends_the_run_with_run_error(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_error(500, "upstream exploded")
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        async with s.http.post(s.url("/chat"), json={"message": "hi"}, headers=AUTH) as r:
            events = [e async for _, e in sse_events(r)]
        assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
        assert events[-1]["code"] == "error" and events[-1]["message"]
        assert "sk-test" not in json.dumps(events)  # the key never reaches the browser


def test_only_lark_health_and_metrics_are_open(home: Path) -> None:
    web_app = create_app(App(web_settings(home, "http://127.0.0.1:9")))
    # Lark's callbacks check their own signatures; health and metrics are for the operator
    open_routes = {
        "handle_events",
        "handle_card",
        "handle_health",
        "handle_ready",
        "handle_metrics",
    }
    opened = [
        route.handler.__name__
        for route in web_app.router.routes()
        if route.method != "HEAD" and getattr(route.handler, ACCESS, None) == OPEN
    ]
    assert sorted(opened) == sorted(open_routes)
    assert list(web_app.middlewares) == [gate]  # one middleware decides for every route


async def _new_thing(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def _serve_with_a_new_route(app: App) -> TestServer:
    """`serve`'s application for `app`, plus routes added without any marking."""
    web_app = create_app(app)
    web_app.router.add_get("/new-thing", _new_thing)
    web_app.router.add_post("/api/new-thing", _new_thing)
    server = TestServer(web_app, host="127.0.0.1")
    await server.start_server()
    return server


async def test_a_route_added_without_marking_is_closed(home: Path, fake_llm: FakeLLM) -> None:
    app = App(web_settings(home, fake_llm.base_url))
    await app.start()
    server = await _serve_with_a_new_route(app)
    try:
        async with aiohttp.ClientSession() as http:
            for method, path in [("GET", "/new-thing"), ("POST", "/api/new-thing")]:
                async with http.request(method, server.make_url(path)) as r:
                    assert r.status == 401, (method, path)
                async with http.request(method, server.make_url(path), headers=AUTH) as r:
                    assert r.status == 200 and (await r.json()) == {"ok": True}
            async with http.get(server.make_url("/healthz")) as r:
                assert r.status == 200  # open routes stay open
            async with http.get(server.make_url("/no-such-route")) as r:
                assert r.status == 404
    finally:
        await server.close()
        await app.stop()


async def test_without_the_web_channel_an_unmarked_route_is_refused(
    home: Path, fake_llm: FakeLLM
) -> None:
    app = App(web_settings(home, fake_llm.base_url, web={"enabled": False}))
    await app.start()
    server = await _serve_with_a_new_route(app)
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(server.make_url("/new-thing"), headers=AUTH) as r:
                assert r.status == 401  # nobody can log in: closed, not open
            async with http.get(server.make_url("/metrics")) as r:
                assert r.status == 200
    finally:
        await server.close()
        await app.stop()


async def test_static_files_are_served_from_their_folder_only(
    home: Path, fake_llm: FakeLLM
) -> None:
    async with Served(web_settings(home, fake_llm.base_url)) as s:
        assert s.http is not None
        async with s.http.get(s.url("/static/vendor/marked.esm.js")) as r:
            assert r.status == 200 and "javascript" in r.headers["Content-Type"]
            assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        async with s.http.head(s.url("/")) as r:
            assert r.status == 200 and "Content-Security-Policy" in r.headers
        for path in ("/static/nope.js", "/static/vendor", "/static/%2e%2e/__init__.py"):
            async with s.http.get(s.url(path)) as r:
                assert r.status == 404, path
        async with s.http.get(s.url("/static/..%2F__init__.py")) as r:
            assert r.status == 404
