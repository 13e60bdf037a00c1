"""A wrong Lark app secret is never silent: /healthz says so, the log names the fix once a
minute, and the message sent meanwhile is answered once Lark accepts the secret."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, message_event, settings_for


async def test_wrong_secret_is_unhealthy_and_the_message_waits_for_the_fix(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_llm.reply_text("answered after the fix")
    fake_lark.app_secret = "the-secret-in-the-console"  # ours ("secret") is wrong
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url)
    with capture_logs() as logs:
        async with Served(settings, lease_seconds=1.0) as s:
            assert s.http is not None
            async with s.http.get(s.url("/healthz")) as resp:
                body = await resp.json()
            assert resp.status == 503 and body["status"] == "unavailable"
            assert "99991543" in body["reason"] and "lark.app_secret" in body["reason"]
            async with s.http.get(s.url("/readyz")) as resp:
                ready = await resp.json()
            assert resp.status == 503 and ready["status"] == "unavailable"
            assert ready["ready"] is False and ready["accepting"] is True  # one verdict
            assert not ready["components"]["lark_token"]["ok"]

            for n in range(3):  # three messages, several sweeps: the fix is logged once
                status, _ = await s.post_event(message_event(f"hi {n}", message_id=f"om_w{n}"))
                assert status == 200
            assert await s.app.idle(30)
            await s.sweep()  # retaken, refused again: still waiting, still no model call
            assert await s.app.idle(30)
            assert fake_lark.sent == [] and fake_llm.requests == []
            assert await s.app.message_status("om_w0") == "claimed"  # not done, not failed

            fake_lark.app_secret = "secret"  # the operator fixed it in the console
            await fake_lark.wait_for(lambda: len(fake_lark.sent) == 3, timeout=30)
            async with s.http.get(s.url("/healthz")) as resp:
                assert resp.status == 200
    assert sorted(m["reply_to"] for m in fake_lark.sent) == ["om_w0", "om_w1", "om_w2"]
    refused = [e for e in logs if e["event"] == "lark_credentials_refused"]
    assert len(refused) == 1 and "lark.app_secret" in refused[0]["fix"]
    waiting = [e for e in logs if e["event"] == "lark_reply_waiting" and e["log_level"] != "debug"]
    assert sorted(e["message_id"] for e in waiting) == ["om_w0", "om_w1", "om_w2"]
    assert all(e["fix"] for e in waiting)
    assert not [e for e in logs if "exc_info" in e or "exception" in e]  # no tracebacks
    assert any(e["event"] == "lark_credentials_accepted" for e in logs)
