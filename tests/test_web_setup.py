"""The web page's one-scan setup: `POST /api/setup/start` shows a QR code (SVG), `GET
/api/setup/status` follows the scan to the end; same registration, saving and owner as
`larkbot setup`, behind the web login."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.lark_app import new_app_info
from tests.fakes.lark_registration import FakeRegistration
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.web_harness import AUTH, web_settings


async def _status(s: Served) -> dict[str, Any]:
    async with s.http.get(s.url("/api/setup/status"), headers=AUTH) as r:
        assert r.status == 200
        body: dict[str, Any] = await r.json()
        return body


async def _until_settled(s: Served) -> dict[str, Any]:
    async with asyncio.timeout(30):  # bounded; the fake answers each poll at once
        while (status := await _status(s))["state"] == "waiting":
            await asyncio.sleep(0.05)
    return status


@pytest.fixture
def lark_hosts(monkeypatch: pytest.MonkeyPatch, fake_lark: FakeLark) -> FakeLark:
    """The Open Platform is the fake (the app is read back there after the scan)."""
    monkeypatch.setenv("LARK_DOMAIN", fake_lark.domain)
    fake_lark.app_info = new_app_info("larkbot")
    return fake_lark


async def test_the_page_creates_the_app_with_one_scan(
    home: Path, fake_llm: FakeLLM, lark_hosts: FakeLark
) -> None:
    async with FakeRegistration() as reg:
        settings = web_settings(home, fake_llm.base_url, lark={"accounts_domain": reg.domain})
        async with Served(settings) as s:
            first = await _status(s)
            assert first["configured"] is False and first["state"] == "idle"
            assert first["llm"] is None  # a local model: no key needed
            async with s.http.post(s.url("/api/setup/start")) as r:
                assert r.status == 401  # behind the web login like every other endpoint
            async with s.http.post(s.url("/api/setup/start"), headers=AUTH) as r:
                assert r.status == 200
                shown = await r.json()
            assert shown["state"] == "waiting" and shown["url"].startswith(reg.domain)
            assert shown["svg"].startswith("<svg") and shown["expires_at"] > 0
            await reg.scan(shown["url"])
            done = await _until_settled(s)
            assert done["state"] == "done", done
            assert await s.app.owners.check("ou_creator")
    result = done["result"]
    assert result["app_id"] == reg.app_id and result["owner"] == "ou_creator"
    assert "Restart `larkbot serve`" in result["steps"][0]
    assert any("cardkit:card:write" in m for m in result["missing"])  # nothing granted yet
    saved = home / ".secrets" / "lark.env"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert f"LARK_APP_ID={reg.app_id}\n" in saved.read_text()


async def test_a_refused_scan_is_a_failed_state_and_can_be_retried(
    home: Path, fake_llm: FakeLLM, lark_hosts: FakeLark
) -> None:
    async with FakeRegistration(outcome="access_denied") as reg:
        settings = web_settings(home, fake_llm.base_url, lark={"accounts_domain": reg.domain})
        async with Served(settings) as s:
            async with s.http.post(s.url("/api/setup/start"), headers=AUTH) as r:
                shown = await r.json()
            await reg.scan(shown["url"])
            failed = await _until_settled(s)
            assert failed["state"] == "failed" and "cancelled or refused" in failed["error"]
            reg.outcome = "success"
            async with s.http.post(s.url("/api/setup/start"), headers=AUTH) as r:
                again = await r.json()
            assert again["state"] == "waiting" and again["error"] == ""
    assert not (home / ".secrets" / "lark.env").exists()


async def test_the_status_names_a_missing_llm_key_in_serves_words(home: Path) -> None:
    hosted = web_settings(home, "https://api.openai.com/v1", llm={"api_key": ""})
    async with Served(hosted) as s:
        problem = (await _status(s))["llm"]
    assert problem["key"] == "llm_key"
    assert problem["problem"].startswith("llm.api_key is empty but https://api.openai.com/v1")
    assert "LLM_API_KEY" in problem["fix"] and "llm.base_url" in problem["fix"]
