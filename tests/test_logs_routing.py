"""One log format: third-party loggers and MCP servers' stderr come out as our JSON lines."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from larkbot.logs import adopt_library_logger, configure_logging
from tools.mcp_stderr import StderrToLog


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_library_records_are_json(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "json")
    # What lark_oapi.core.log does at import (importing the SDK itself takes seconds).
    lark_logger = logging.getLogger("Lark")
    own = logging.StreamHandler(sys.stdout)
    own.setFormatter(logging.Formatter("[Lark] [%(asctime)s] [%(levelname)s] %(message)s"))
    lark_logger.addHandler(own)
    adopt_library_logger("Lark")
    lark_logger.warning("connect failed, token=%s", "abc")
    logging.getLogger("apscheduler").warning("job missed")
    captured = capsys.readouterr()
    assert "[Lark]" not in captured.out + captured.err
    events = {e["event"]: e for e in _json_lines(captured.err)}
    assert events["connect failed, token=abc"]["logger"] == "Lark"
    assert events["job missed"]["level"] == "warning"


def test_mcp_server_stderr_becomes_log_events(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "json")
    pipe = StderrToLog("files")
    code = "import sys; sys.stderr.write('starting up\\n\\nlistening on stdio\\n')"
    subprocess.run([sys.executable, "-c", code], stderr=pipe.writer, check=True, timeout=30)
    pipe.close()
    assert pipe.join(5)
    lines = [e for e in _json_lines(capsys.readouterr().err) if e["event"] == "mcp_server_stderr"]
    assert [(e["server"], e["line"]) for e in lines] == [
        ("files", "starting up"),
        ("files", "listening on stdio"),
    ]


def test_debug_lines_follow_the_configured_level(capsys: pytest.CaptureFixture[str]) -> None:
    from larkbot.logs import get_logger

    try:
        configure_logging("debug", "json")
        get_logger("larkbot.test").debug("seen_at_debug")
        configure_logging("info", "json")
        get_logger("larkbot.test").debug("dropped_at_info")
        lines = [e["event"] for e in _json_lines(capsys.readouterr().err)]
        assert "seen_at_debug" in lines and "dropped_at_info" not in lines
    finally:
        configure_logging("info", "json")
