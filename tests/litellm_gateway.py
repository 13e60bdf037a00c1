"""The LiteLLM proxy (a real OpenAI-compatible gateway from PyPI) as a loopback subprocess.

It needs ~10 s (more on a loaded machine) to import and start, so conftest starts it as soon
as collection shows a test that uses it, and the tests before it hide the wait.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.processes import free_port

MASTER_KEY = "sk-larkbot-test-0123456789abcdef"
MOCK_TEXT = "Hello from the LiteLLM mock"
CONFIG = """model_list:
  - model_name: mock-gpt
    litellm_params: {{model: openai/mock-gpt, mock_response: "{mock}"}}
  - model_name: ds-flash
    litellm_params:
      model: deepseek/deepseek-v4-flash
      api_base: http://127.0.0.1:{upstream}/v1
      api_key: upstream-key
  - model_name: house-thinker
    litellm_params:
      model: openai/house-thinker
      api_base: http://127.0.0.1:{upstream}/v1
      api_key: upstream-key
"""


class Gateway:
    """One proxy process: `base_url` (ends in /v1) and the `upstream` port of its fake routes."""

    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="larkbot-litellm-"))
        self.upstream, self.port = free_port(), free_port()
        (self.work / "config.yaml").write_text(
            CONFIG.format(mock=MOCK_TEXT, upstream=self.upstream)
        )
        env = {
            **os.environ,
            "LITELLM_MASTER_KEY": MASTER_KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # never fetch the price list from the internet
            "LITELLM_TELEMETRY": "False",
        }
        self.log = (self.work / "litellm.log").open("wb")
        self.proc = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("litellm")),
                "--config",
                "config.yaml",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.work,
        )
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self, seconds: float = 150.0) -> None:
        """Poll the liveness endpoint until it answers (bounded); fail with the proxy's log."""
        deadline = time.monotonic() + seconds
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"LiteLLM exited: {self.tail()}")
            try:
                url = f"http://127.0.0.1:{self.port}/health/liveliness"
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"LiteLLM did not start in {seconds:g} s: {self.tail()}")
            time.sleep(0.3)

    def tail(self) -> str:
        """The end of the proxy's log."""
        self.log.flush()
        return (self.work / "litellm.log").read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        """Terminate the process (kill after 10 s)."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


_started: Gateway | None = None


def start_gateway() -> Gateway:
    """The one proxy of this test session, started on first use."""
    global _started
    if _started is None:
        _started = Gateway()
    return _started


def stop_gateway() -> None:
    """Stop the proxy if it was started."""
    global _started
    if _started is not None:
        _started.stop()
        _started = None
