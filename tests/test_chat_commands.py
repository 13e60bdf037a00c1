"""`larkbot chat`'s commands with piped input (a real process): /help lists the commands,
/resume lists the terminal's earlier conversations and continues the one chosen, by number or
by id, with its history."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from tests.fakes.llm import FakeLLM

LARKBOT = str(Path(sys.executable).parent / "larkbot")


async def _chat(home: Path, llm: FakeLLM, lines: list[str]) -> str:
    """Run `larkbot chat` on these input lines (piped) to its end; its stdout."""
    config = home / "config.yaml"
    config.write_text(
        f"llm: {{base_url: '{llm.base_url}', api_key: k, model: fake-model, max_retries: 0}}\n"
        f"storage: {{url: 'sqlite:///{home}/larkbot.db'}}\nscheduler: {{enabled: false}}\n"
    )
    proc = await asyncio.create_subprocess_exec(
        LARKBOT,
        "chat",
        "--config",
        str(config),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "LARKBOT_HOME": str(home)},
    )
    out, err = await asyncio.wait_for(proc.communicate("\n".join(lines).encode() + b"\n"), 120)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def _users(request: dict[str, object]) -> list[object]:
    messages = request["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m["role"] == "user"]


@pytest.mark.timeout(240)  # two real processes on a loaded machine
async def test_help_lists_commands_and_resume_continues_a_conversation(
    home: Path, fake_llm: FakeLLM
) -> None:
    for text in ("Paris.", "Rome.", "Its river is the Seine.", "The Tiber."):
        fake_llm.reply_text(text)
    out = await _chat(home, fake_llm, ["capital of France?", "/new", "capital of Italy?", "/help"])
    help_part = out.split("› /help", 1)[1]
    for command in ("/new", "/resume", "/help", "/exit"):
        assert re.search(rf"^\s+{command}\s+\S", help_part, re.MULTILINE), help_part
    assert "larkbot chat" not in help_part  # a list, not the banner again

    # a new process: both conversations are listed, newest first, and one is continued
    out = await _chat(home, fake_llm, ["/resume", "/resume 2", "and its river?", "/resume 7"])
    listing = out.split("› /resume 2", 1)[0]
    italy = listing.index("capital of Italy?")
    assert "1." in listing[:italy] and "capital of France?" in listing[italy:]
    assert "(continuing capital of France?" in out and "larkbot: Paris." in out
    assert _users(fake_llm.requests[2]) == ["capital of France?", "and its river?"]
    assert "No conversation 7" in out

    # by id: the one shown in brackets
    rome = re.search(r"capital of Italy\?\s+\[(cli:[^\]]+)\]", listing)
    assert rome is not None
    lines = [f"/resume {rome.group(1)}", "its river?", "/resume cli:x", "/resume ²"]
    out = await _chat(home, fake_llm, lines)
    assert _users(fake_llm.requests[3]) == ["capital of Italy?", "its river?"]
    assert "The Tiber." in out and "No conversation 'cli:x'" in out
    assert "No conversation '²'" in out  # a digit that is no number: an id, not a crash
