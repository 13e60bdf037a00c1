"""`larkbot tools` per interface matches the design doc's registration table (工具注册范围)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# the design doc's table: tool -> (CLI, Web API, Lark bot, fast path). browser_* are in the
# CLI too (issue 15: "add the CLI if it costs nothing"; there the owner is asked per origin);
# computer_use needs enabling
DESIGN_TABLE: dict[str, tuple[bool, bool, bool, bool]] = {
    "shell": (True, True, True, True),
    "file_read": (True, True, True, True),
    "file_write": (True, True, True, False),
    "file_list": (True, True, True, False),
    "web_search": (True, True, True, False),
    "web_fetch": (True, True, True, False),
    "rg_search": (True, True, True, False),
    "fd_find": (True, True, True, False),
    "schedule_create": (True, True, True, False),
    "schedule_list": (True, True, True, False),
    "schedule_remove": (True, True, True, False),
    "knowledge_search": (True, True, True, False),
    "knowledge_read": (True, True, True, False),
    "knowledge_add": (True, True, True, False),
    "knowledge_edit": (True, True, True, False),
    "lark_calendar_events": (True, True, True, False),
    "lark_chat_messages": (True, True, True, False),
    "lark_message_send": (True, True, True, False),
    "ui_card": (True, True, True, False),
    "browser_session": (True, True, True, False),
    "browser_tab": (True, True, True, False),
    "browser_page": (True, True, True, False),
    "computer_use": (False, True, True, False),
}


def tools_output(home: Path, interface: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "larkbot", "tools", "--interface", interface],
        capture_output=True,
        text=True,
        timeout=60,
        env={"LARKBOT_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.splitlines()[2:]
    return {line.split()[0] for line in rows if line and not line.startswith(("find_tools", " "))}


@pytest.mark.parametrize(
    ("interface", "column"), [("cli", 0), ("web", 1), ("lark", 2), ("fast", 3)]
)
def test_interface_exposes_the_design_table(home: Path, interface: str, column: int) -> None:
    (home / "config.yaml").write_text("computer_use: {enabled: true}\n")
    listed = tools_output(home, interface) & set(DESIGN_TABLE)
    expected = {name for name, row in DESIGN_TABLE.items() if row[column]}
    assert listed == expected


def test_flags_shown_per_tool(home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "larkbot", "tools", "--interface", "lark"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"LARKBOT_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert "side_effect" in rows["shell"] and "consent" in rows["shell"]
    assert "side_effect" in rows["lark_message_send"] and "consent" in rows["lark_message_send"]
    assert "private_data" in rows["knowledge_search"] and "side_effect" not in rows["web_search"]
    assert "side_effect" in rows["browser_page"] and "consent" in rows["browser_page"]


def test_computer_use_absent_unless_enabled(home: Path) -> None:
    listed = tools_output(home, "lark")
    assert "shell" in listed and "computer_use" not in listed
