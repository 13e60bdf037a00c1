"""`larkbot chat` in a pseudo-terminal (pexpect): a spinner while waiting, rendered markdown,
Ctrl-C stops the answer and keeps the conversation, the consent question names what it grants,
Ctrl-D quits."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.fakes.llm import FakeLLM, FakeToolCall, Reply

LARKBOT = str(Path(sys.executable).parent / "larkbot")


def _spawn(home: Path, llm: FakeLLM) -> pexpect.spawn:
    config = home / "config.yaml"
    config.write_text(
        f"llm: {{base_url: '{llm.base_url}', api_key: k, model: fake-model, max_retries: 0}}\n"
        f"storage: {{url: 'sqlite:///{home}/larkbot.db'}}\nscheduler: {{enabled: false}}\n"
    )
    env = {**os.environ, "LARKBOT_HOME": str(home), "TERM": "xterm-256color", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    return pexpect.spawn(
        LARKBOT, ["chat", "--config", str(config)], env=env, encoding="utf-8", dimensions=(40, 100)
    )


async def _expect(child: pexpect.spawn, pattern: Any, timeout: float = 60) -> str:
    """Wait (bounded, off the event loop: the fakes serve on it) for `pattern`; the text before."""
    await asyncio.to_thread(child.expect, pattern, timeout=timeout)
    return str(child.before)


async def _until(predicate: Any, timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.05)


@pytest.mark.timeout(180)  # a real process in a pty; slow on a loaded machine
async def test_spinner_ctrl_c_stops_the_answer_and_keeps_the_session(
    home: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.add(Reply(text="this answer never arrives", delay=30))
    fake_llm.reply_text("The **second** answer, `rendered`.")
    child = _spawn(home, fake_llm)
    try:
        await _expect(child, "larkbot chat")
        await _expect(child, "› ")
        child.sendline("first question")
        await _expect(child, "thinking")  # the spinner's caption, next to a braille frame
        await _expect(child, "[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]")
        await _until(lambda: len(fake_llm.requests) == 1)
        child.sendintr()  # Ctrl-C while the model is still thinking
        await _expect(child, "stopped")
        await _expect(child, "› ")  # back at the prompt, not out of the program
        child.sendline("second question")
        shown = await _expect(child, "answer")
        # rendered as it streams: a half-typed "**se" may flash by, "**second**" never shows
        assert "second" in shown and "**second**" not in shown and "`rendered`" not in shown
        await _expect(child, "› ")
        messages = fake_llm.requests[1]["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        assert users == ["first question", "second question"]  # same conversation
        child.sendeof()  # Ctrl-D quits
        await _expect(child, pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


CONSENT_PLUGIN = """
from tools.base import BaseTool

class Touch(BaseTool):
    name = "touch"
    description = "Create a marker file"
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
    side_effect = True

    def consent_check(self, **kw):
        return "create " + kw["path"]

    def consent_scope(self, **kw):
        return "/tmp/larkbot-touch"

    async def run(self, **kw):
        return "created " + kw["path"]
"""


@pytest.mark.timeout(180)  # a real process in a pty; slow on a loaded machine
async def test_consent_question_names_what_yes_grants(home: Path, fake_llm: FakeLLM) -> None:
    (home / "tools").mkdir()
    (home / "tools" / "touch.py").write_text(CONSENT_PLUGIN)
    for name in ("a", "b", "c"):
        fake_llm.reply_tools(FakeToolCall("touch", {"path": f"/tmp/larkbot-touch/{name}"}))
        fake_llm.reply_text(f"Done {name}.")
    child = _spawn(home, fake_llm)
    try:
        await _expect(child, "› ")
        child.sendline("make a")
        question = await _expect(child, r"\? ")
        assert "touch wants to: create /tmp/larkbot-touch/a" in question
        assert "[y] allows this one call" in question
        assert "[s] allows everything under /tmp/larkbot-touch" in question
        child.sendline("y")  # this call only
        await _expect(child, "created /tmp/larkbot-touch/a")
        await _expect(child, "Done a")
        await _expect(child, "› ")
        child.sendline("make b")
        assert "touch wants to: create /tmp/larkbot-touch/b" in await _expect(child, r"\? ")
        child.sendline("s")  # and the rest of this session
        await _expect(child, "Done b")
        await _expect(child, "› ")
        child.sendline("make c")
        shown = await _expect(child, "Done c")
        assert "created /tmp/larkbot-touch/c" in shown and "wants to" not in shown  # not asked
        await _expect(child, "› ")
        child.sendintr()  # at the prompt: Ctrl-C quits
        await _expect(child, pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_warnings_stay_in_the_status_line_not_in_the_transcript() -> None:
    import io

    from rich.console import Console

    from larkbot.chat_view import RichView
    from larkbot.events import TextDelta

    out = io.StringIO()
    view = RichView(Console(file=out, width=80, force_terminal=False))
    view.start()
    view.status("llm_retry attempt=1 wait=0.5")
    assert "llm_retry" in str(view.live.get_renderable().renderables[-1])  # type: ignore[union-attr]
    view.show(TextDelta("The **answer**."))
    view.end()
    assert "The answer." in out.getvalue() and "llm_retry" not in out.getvalue()


def test_a_failed_turn_ends_at_its_error() -> None:
    import io

    from rich.console import Console

    from larkbot.chat_view import RichView
    from larkbot.events import ErrorEvent

    out = io.StringIO()  # a terminal: every redraw of the live region is in the output
    view = RichView(Console(file=out, width=100, force_terminal=True, color_system=None))
    view.start()
    view.status("llm_failed session=s error=Cannot reach the LLM endpoint")  # logged first
    view.show(ErrorEvent("The language model failed: Cannot reach the LLM endpoint"))
    view.status("late_warning from=the turn's end")  # after the error: shown nowhere
    view.end()
    after = out.getvalue().split("✗ The language model failed", 1)[1]
    assert "thinking" not in after and "llm_failed" not in after and "late_warning" not in after
    assert view.failed and view.live is None


@pytest.mark.timeout(180)  # a real process in a pty; slow on a loaded machine
async def test_help_lists_commands_and_resume_brings_back_the_sessions_consent(
    home: Path, fake_llm: FakeLLM
) -> None:
    (home / "tools").mkdir()
    (home / "tools" / "touch.py").write_text(CONSENT_PLUGIN)
    for name in ("a", "b", "c"):
        fake_llm.reply_tools(FakeToolCall("touch", {"path": f"/tmp/larkbot-touch/{name}"}))
        fake_llm.reply_text(f"Done {name}.")
    child = _spawn(home, fake_llm)
    try:
        await _expect(child, "› ")
        child.sendline("/help")
        listed = await _expect(child, "› ")
        assert "/resume" in listed and "/new" in listed and "Ctrl-C" in listed
        assert "larkbot chat" not in listed  # the commands, not the banner again
        child.sendline("make a")
        await _expect(child, r"\? ")
        child.sendline("s")  # everything under /tmp/larkbot-touch, for this session
        await _expect(child, "Done a")
        await _expect(child, "› ")
        child.sendline("/new")
        await _expect(child, "› ")
        child.sendline("make b")  # another conversation: asked again
        assert "wants to: create /tmp/larkbot-touch/b" in await _expect(child, r"\? ")
        child.sendline("y")
        await _expect(child, "Done b")
        await _expect(child, "› ")
        child.sendline("/resume")
        await _expect(child, "1. ")
        await _expect(child, "› ")
        child.sendline("/resume 1")  # the first one, with what was allowed in it
        await _expect(child, "continuing make a")
        await _expect(child, "› ")
        child.sendline("make c")
        shown = await _expect(child, "Done c")
        assert "created /tmp/larkbot-touch/c" in shown and "wants to" not in shown
        users = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"]
        assert users == ["make a", "make c"]
        await _expect(child, "› ")
        child.sendeof()
        await _expect(child, pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
