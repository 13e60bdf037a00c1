"""What users install is what is tested: `larkbot serve` from the wheel, without dev extras.

`make test` builds the wheel, installs it into a clean virtualenv (no dev extras) and names its
`larkbot` in LARKBOT_INSTALLED_BIN. This test starts `serve` from there on loopback, against
the FakeLark and FakeLLM, and has the model call every built-in tool once in one owner turn
(approval cards are approved). A runtime dependency that only the dev extras pull in makes a
tool fail here, and the suite with it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from aiohttp import web

from tests.cards_samples import SAMPLES
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.lark_harness import ENCRYPT_KEY, OWNER, TOKEN, message_event, seal
from tests.processes import free_port
from tests.test_cards_approval_e2e import approval_cards, approval_id_of, click

INSTALLED = os.environ.get("LARKBOT_INSTALLED_BIN", "")
# Fails, never skips, without the installed wheel: by hand, deselect with -m "not installed".
pytestmark = pytest.mark.installed
# tools that need a running lark-cli or a real desktop are covered by their own suites
# Lark's own tools need a Lark app, the workspace tools a person's Lark authorization (both run
# against the fake Lark in their own tests); computer_use a display
WORKSPACE = {
    "lark_doc_read", "lark_doc_search", "lark_doc_create", "lark_doc_append", "lark_sheet_read",
    "lark_sheet_write", "lark_bitable_read", "lark_bitable_write", "lark_task",
}  # fmt: skip
NOT_HERE = {
    "lark_calendar_events", "lark_chat_messages", "lark_message_send", "computer_use", *WORKSPACE
}  # fmt: skip


async def _site() -> tuple[web.AppRunner, str]:
    """A loopback page for web_fetch and a SearXNG-shaped JSON search for web_search."""
    page = "<html><head><title>Loopback</title></head><body><article><h1>Loopback page</h1>"
    page += "<p>" + "The installed product read this paragraph. " * 8 + "</p></article></body>"

    async def html(_: web.Request) -> web.Response:
        return web.Response(text=page + "</html>", content_type="text/html")

    async def search(_: web.Request) -> web.Response:
        hit = {"title": "Found", "url": "https://example.org/found", "content": "search works"}
        return web.json_response({"results": [hit]})

    app = web.Application()
    app.router.add_get("/page", html)
    app.router.add_get("/search", search)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


def _calls(work: Path, site: str) -> list[tuple[str, dict[str, Any]]]:
    note = {"title": "Installed", "content": "the knowledge round trip works"}
    job = {"job_id": "smoke", "prompt": "say hi", "interval_minutes": 60}
    return [
        ("file_write", {"path": str(work / "a.txt"), "content": "needle-4711"}),
        ("file_read", {"path": str(work / "a.txt")}),
        ("file_list", {"path": str(work)}),
        ("rg_search", {"pattern": "needle-4711", "path": str(work)}),
        ("fd_find", {"pattern": "a.txt", "path": str(work)}),
        ("shell", {"command": "echo shell-ran"}),
        ("knowledge_add", note),
        ("knowledge_search", {"query": "round trip"}),
        ("knowledge_read", {"source": "installed.md"}),
        ("knowledge_edit", {"source": "installed.md", "content": "edited round trip"}),
        ("schedule_create", job),
        ("schedule_list", {}),
        ("schedule_remove", {"job_id": "smoke"}),
        ("ui_card", {"card": SAMPLES["rank"]}),
        ("skill_read", {"name": "ui-card"}),
        ("get_secret", {"name": "smoke"}),
        ("send_file", {"path": str(work / "a.txt")}),
        ("web_search", {"query": "anything"}),  # untrusted results: no side effect after these
        ("web_fetch", {"url": f"{site}/page"}),
        ("browser_session", {"action": "start"}),  # Debian's chromium, driven by playwright
        ("browser_tab", {"action": "open", "url": f"{site}/page"}),
        ("browser_page", {"action": "read_text"}),
        ("memory_save", {"content": "The installed product remembers"}),
        ("memory_search", {"query": "installed product"}),
        ("memory_forget", {}),  # its id comes from memory_save's result (_forget_then_finish)
    ]


def _forget_then_finish(body: dict[str, Any]) -> Reply:
    """After the scripted calls: forget the memory memory_save reported, then finish."""
    results = [str(m.get("content")) for m in body["messages"] if m["role"] == "tool"]
    if any(r.startswith("Forgot memory") for r in results):
        return Reply(text="every tool ran")
    saved = [r.split()[2] for r in results if r.startswith("Saved memory ")]
    return Reply(
        tool_calls=[FakeToolCall("memory_forget", {"memory_id": saved[-1] if saved else ""})]
    )


@pytest.mark.timeout(240)  # a cold start of the installed serve (≤ 60 s) plus every tool (≤ 120 s)
async def test_installed_serve_runs_every_builtin_tool(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    assert INSTALLED, "set LARKBOT_INSTALLED_BIN: `make test` installs the wheel in a clean venv"
    runner, site = await _site()
    work = tmp_path / "work"
    work.mkdir()
    (home / ".secrets").mkdir(mode=0o700)
    (home / ".secrets" / "smoke").write_text("not-a-real-secret")
    port = free_port()
    config = {
        "server": {"host": "127.0.0.1", "port": port, "drain_seconds": 5},
        "lark": {
            "app_id": "cli_test",
            "app_secret": "secret",
            "encrypt_key": ENCRYPT_KEY,
            "verification_token": TOKEN,
            "domain": fake_lark.domain,
            "streaming": False,
        },
        "llm": {"base_url": fake_llm.base_url, "api_key": "sk-test", "max_retries": 0},
        "storage": {"url": f"sqlite:///{home}/larkbot.db"},
        "owner": {"open_ids": [OWNER]},
        "agent": {"max_steps": 30},  # one turn calls every tool in turn
        "tools": {
            "web_fetch": {"allow_private_networks": True},
            "web_search": {"provider": "searxng", "base_url": site},
        },
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    calls = _calls(work, site)
    for name, arguments in calls[:-1]:
        fake_llm.reply_tools((name, arguments))
    fake_llm.responder = _forget_then_finish
    env = {**os.environ, "LARKBOT_HOME": str(home), "PATH": "/usr/bin:/bin"}
    proc = await asyncio.create_subprocess_exec(
        INSTALLED, "serve", "--config", str(home / "config.yaml"), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            for _ in range(300):  # readiness, bounded (~30 s on a loaded machine)
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the installed serve never became healthy")
            body, headers = seal(message_event("run every tool", message_id="om_install"))
            assert (
                await http.post("/lark/events", content=body, headers=headers)
            ).status_code == 200
            approved = 0
            try:
                async with asyncio.timeout(120):
                    while "every tool ran" not in fake_lark.texts():
                        cards = approval_cards(fake_lark)
                        for card in cards[approved:]:  # the owner approves each card shown
                            body, headers = seal(click(approval_id_of(card), "approve"))
                            resp = await http.post("/lark/card", content=body, headers=headers)
                            assert resp.status_code == 200
                        approved = len(cards)
                        await fake_lark.wait_for(
                            lambda k=approved: (
                                "every tool ran" in fake_lark.texts()
                                or len(approval_cards(fake_lark)) > k
                            ),
                            timeout=120,
                        )
            except TimeoutError:
                done = len(fake_llm.requests)
                raise AssertionError(
                    f"stuck after {done} model calls: {fake_lark.texts()}"
                ) from None
    finally:
        proc.terminate()
        _, stderr = await asyncio.wait_for(proc.communicate(), 20)
        await runner.cleanup()
    results = {
        m["tool_call_id"]: m["content"]
        for r in fake_llm.requests
        for m in r["messages"]
        if m["role"] == "tool"
    }
    ran = {}
    for request in fake_llm.requests:
        for message in request["messages"]:
            for call in message.get("tool_calls") or []:
                ran[call["function"]["name"]] = results.get(call["id"], "")
    failed = {name: text[:200] for name, text in ran.items() if text.startswith("Error")}
    assert failed == {}, f"{failed}\n{stderr.decode()[-2000:]}"
    advertised = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert set(ran) == {name for name, _ in calls} == advertised - NOT_HERE - {"find_tools"}
    assert "needle-4711" in ran["rg_search"] and "a.txt" in ran["fd_find"]
    assert "The installed product read this paragraph" in ran["web_fetch"], ran["web_fetch"]
    assert "The installed product read this paragraph" in ran["browser_page"]
    assert "round trip" in ran["knowledge_read"] and "shell-ran" in ran["shell"]
    assert fake_lark.uploads and any(m["msg_type"] == "interactive" for m in fake_lark.sent)
