"""`larkbot serve` that cannot start says why and how to fix it on one screen: a busy port, an
unwritable home, a config file that is not YAML — real processes, no traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def _serve(home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LARKBOT_HOME": str(home), "LARKBOT_HOST": "127.0.0.1", **extra}
    env.pop("LARKBOT_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "larkbot", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _one_screen(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) <= 8, proc.stderr
    assert "Fix:" in proc.stderr, proc.stderr
    return proc.stderr


def test_port_in_use_names_the_port_and_the_fix(home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = _one_screen(_serve(home, LARKBOT_PORT=str(port)))
    assert f"port {port} on 127.0.0.1 is already in use" in err
    assert "LARKBOT_PORT" in err


def test_unwritable_home_names_the_folder_and_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a home below a file cannot be created, whoever runs the test
    home = blocker / "home"
    err = _one_screen(_serve(home, LARKBOT_PORT="0"))
    assert f"cannot write to {home}" in err
    assert "LARKBOT_HOME" in err


def test_bad_yaml_names_the_line_and_the_fix(home: Path) -> None:
    (home / "config.yaml").write_text("server:\n  port: 8080\n lark: {app_id: x\n")
    err = _one_screen(_serve(home, LARKBOT_PORT="0"))
    assert "is not valid YAML at line" in err
    assert "config.example.yaml" in err
