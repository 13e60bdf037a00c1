"""`larkbot serve` in long-connection mode, end to end: a real process finds the gateway on its
`lark.domain`, takes a message event frame, acks it, and replies once through the REST API; the
same event delivered again over the connection is acked as a duplicate and answered no more."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from larkbot.config_env import ENV_KEYS
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, free_port, message_event
from tests.processes import serve_process, stop_serve

# lark-oapi's own ping loop logs through the deprecated `logger.warn` once a socket is closed.
pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")
ANSWER = "Hello over the long connection."


def ack_data(ack: dict[str, Any]) -> Any:
    """What `App.submit` answered, as the SDK puts it in the ACK frame (base64 JSON)."""
    assert ack["code"] == 200, ack
    return json.loads(base64.b64decode(ack["data"]))


@pytest.mark.timeout(180)  # a real process importing lark-oapi; slow on a loaded machine
async def test_serve_over_the_long_connection_replies_once(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    from tests.fakes.lark_ws import FakeLarkWS

    gateway = FakeLarkWS()
    env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS and k != "LARKBOT_CONFIG"}
    async with FakeLark(gateway=gateway) as lark:
        env.update(
            LARKBOT_HOME=str(tmp_path / "home"),
            LARKBOT_HOST="127.0.0.1",
            LARKBOT_PORT=str(free_port()),
            LARK_MODE="websocket",  # no webhook secrets: the connection itself is authenticated
            LARK_APP_ID=lark.app_id,
            LARK_APP_SECRET=lark.app_secret,
            LARK_DOMAIN=lark.domain,  # REST API and endpoint discovery on one fake
            LLM_BASE_URL=fake_llm.base_url,
            LLM_API_KEY="sk-test",
            LLM_MODEL="fake-model",
            LARKBOT_OWNER_OPEN_IDS=OWNER,
        )
        fake_llm.reply_text(ANSWER)
        lark.add_message("om_ws_1", "oc_dm")
        event = message_event("hi over ws", message_id="om_ws_1")
        async with serve_process(env) as proc:
            await gateway.wait_connected(timeout=90)  # the App is ready once it has connected
            assert ack_data(await gateway.push_event(event, timeout=10)) == "queued"
            await lark.wait_for(lambda: bool(lark.sent), timeout=30)
            # Lark redelivers an event whose ACK it missed: the journal has it, nobody answers
            assert ack_data(await gateway.push_event(event, timeout=10)) == "duplicate"
            stderr = await stop_serve(proc)
    assert proc.returncode == 0, stderr[-3000:]
    # the process is gone: nothing else can be sent, so "exactly once" is final
    assert [(m["reply_to"], m["body"]) for m in lark.sent] == [("om_ws_1", {"text": ANSWER})]
    assert len(fake_llm.requests) == 1
    assert gateway.endpoint_calls == 1 and gateway.connections == 1
    endpoint = [r for r in lark.requests if r.path == "/callback/ws/endpoint"]
    assert endpoint and endpoint[0].json["AppID"] == lark.app_id  # found on the REST domain
    logs = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    states = [e.get("state") for e in logs if e.get("event") == "lark_ws_state"]
    assert "connected" in states and "failed" not in states
    assert [e["event"] for e in logs if e.get("level") == "error"] == []  # a clean stop, too
