"""`larkbot serve` as a real process: starts without Lark credentials (web chat only, said in
/readyz), SIGTERM → drain → exit 0."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import httpx

from tests.processes import free_port, serve_process, stop_serve


async def test_serve_without_credentials_then_sigterm(home: Path) -> None:
    port = free_port()
    config = home / "config.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}, drain_seconds: 5}}\n"
        "lark: {verification_token: vt}\n"
        "llm: {base_url: 'http://127.0.0.1:9/v1'}\n"  # local: no key needed
        f"storage: {{url: 'sqlite:///{home}/larkbot.db'}}\n"
    )
    env = {**os.environ, "LARKBOT_HOME": str(home)}
    env.pop("LARK_APP_ID", None), env.pop("LARK_APP_SECRET", None)
    async with serve_process(env, "--config", str(config)) as proc:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(600):  # a readiness probe, bounded (~60 s: a loaded machine is slow)
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break  # the web chat works without Lark credentials
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("serve never became healthy")
            lark = (await http.get("/readyz")).json()["components"]["lark_token"]
            assert lark["detail"] == "lark credentials not set: web chat only"
            challenge = {"type": "url_verification", "challenge": "abc", "token": "vt"}
            resp = await http.post("/lark/events", json=challenge)
            assert (resp.status_code, resp.json()) == (200, {"challenge": "abc"})
        stderr = await stop_serve(proc, 20)
    assert proc.returncode == 0
    events = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    names = [e.get("event") for e in events]
    assert "lark_not_configured" in names and "drained" in names  # JSON logs, clear hint
    pairing = [e for e in events if e.get("event") == "owner_pairing_code"]
    assert len(pairing) == 1 and len(pairing[0]["code"]) == 8  # no owner yet: logged once
