"""`larkbot serve` with no config file, from environment variables alone, against the fakes:
it answers a DM, /healthz and /readyz say so, and /metrics counts the turn and its Lark calls."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import httpx
import pytest

from larkbot.config_env import ENV_KEYS
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import ENCRYPT_KEY, OWNER, TOKEN, message_event, seal
from tests.processes import free_port, serve_process, stop_serve


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus text (0 when absent)."""
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def _wait_healthy(http: httpx.AsyncClient) -> httpx.Response:
    for _ in range(600):  # bounded (~60 s on a loaded machine)
        try:
            resp = await http.get("/healthz")
            if resp.status_code == 200:
                return resp
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("serve never became healthy")


@pytest.mark.timeout(180)  # a real process in a pty; slow on a loaded machine
async def test_env_only_serve_answers_a_dm_and_counts_it(
    tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    home, port = tmp_path / "fresh-home", free_port()
    env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS and k != "LARKBOT_CONFIG"}
    env.update(
        LARKBOT_HOME=str(home),
        LARKBOT_HOST="127.0.0.1",
        LARKBOT_PORT=str(port),
        LARK_APP_ID=fake_lark.app_id,
        LARK_APP_SECRET=fake_lark.app_secret,
        LARK_DOMAIN=fake_lark.domain,
        LARK_ENCRYPT_KEY=ENCRYPT_KEY,
        LARK_VERIFICATION_TOKEN=TOKEN,
        LLM_BASE_URL=fake_llm.base_url,
        LLM_API_KEY="sk-test",
        LLM_MODEL="fake-model",
        LARKBOT_OWNER_OPEN_IDS=OWNER,
    )
    fake_llm.reply_text("Hello from the environment.")
    async with serve_process(env) as proc:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            health = await _wait_healthy(http)
            assert health.json() == {"status": "ok"}
            body, headers = seal(message_event("hi there", message_id="om_env_1"))
            assert (
                await http.post("/lark/events", content=body, headers=headers)
            ).status_code == 200
            await fake_lark.wait_for(lambda: bool(fake_lark.texts()), timeout=20)
            assert fake_lark.texts() == ["Hello from the environment."]
            assert fake_llm.requests[0]["model"] == "fake-model"

            ready = (await http.get("/readyz")).json()
            assert ready["status"] == "ok", ready
            assert ready["components"]["storage"]["ok"] and ready["components"]["llm"]["ok"]
            assert ready["components"]["lark_token"]["ok"]

            for _ in range(600):  # counted when the turn ends, just after the reply; done after
                text = (await http.get("/metrics")).text
                counted = _sample(text, "larkbot_turns_total", interface="lark", outcome="ok")
                if counted and "larkbot_journal_backlog 0.0" in text:
                    break
                await asyncio.sleep(0.05)
            reply = "/open-apis/im/v1/messages/:id/reply"
            assert _sample(text, "larkbot_lark_api_calls_total", endpoint=reply, code="0") == 1
            token = "/open-apis/auth/v3/tenant_access_token/internal"
            assert _sample(text, "larkbot_lark_api_calls_total", endpoint=token, code="0") >= 1
            assert _sample(text, "larkbot_turns_total", interface="lark", outcome="ok") == 1
            assert _sample(text, "larkbot_turn_seconds_count", interface="lark") == 1
            assert (
                _sample(text, "larkbot_llm_requests_total", model="fake-model", outcome="ok") == 1
            )
            assert "larkbot_journal_backlog 0.0" in text
        stderr = await stop_serve(proc, 20)
    assert proc.returncode == 0
    assert (home / "larkbot.db").exists()  # the default storage.url, under the fresh home
    assert "misconfigured" not in stderr  # a complete set-up warns about nothing


def test_healthz_is_honest_about_what_cannot_work(home: Path) -> None:
    from larkbot.config import parse_settings
    from larkbot.misconfig import find_problems

    def blocking(raw: dict[str, object]) -> list[str]:
        return [p.key for p in find_problems(parse_settings(raw)) if p.blocking]

    creds = {"app_id": "cli_x", "app_secret": "s"}
    local_llm = {"base_url": "http://127.0.0.1:11434/v1"}
    assert blocking({"lark": {**creds, "verification_token": "vt"}, "llm": local_llm}) == []
    assert blocking({"lark": creds, "llm": local_llm}) == ["webhook_auth"]  # every event 403
    assert blocking({"lark": {"mode": "websocket"}, "llm": local_llm}) == []  # web chat only
    no_web = {"lark": {"mode": "websocket"}, "llm": local_llm, "web": {"enabled": False}}
    assert blocking(no_web) == ["lark_credentials"]  # nothing could ever answer
    assert blocking({"lark": {**creds, "mode": "websocket"}}) == ["llm_key"]  # hosted, no key


async def test_a_fresh_make_run_without_a_model_key_is_unhealthy_as_the_readme_says(
    home: Path,
) -> None:
    from types import SimpleNamespace

    from larkbot.config import parse_settings
    from larkbot.health import liveness

    def app(raw: dict[str, object]) -> SimpleNamespace:
        return SimpleNamespace(ready=True, settings=parse_settings(raw), client=None, ws=None)

    status, body = await liveness(app({}))  # no config, no Lark, no LLM key: `make run`
    assert status == 503 and "llm.api_key is empty" in body["reason"]
    local = {"llm": {"base_url": "http://127.0.0.1:9/v1"}}  # what `make image-check` serves
    assert await liveness(app(local)) == (200, {"status": "ok"})
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `GET /healthz`"))
    assert "fresh `make run` or `make image-check` serves" not in row  # it used to claim 200
    assert "fresh `make run` with no `LLM_API_KEY` is `503`" in row
