"""`larkbot chat`: the agent in a terminal. On a terminal: `chat_repl` (rich: spinner, markdown,
Ctrl-C stops the answer); piped: plain lines, one per tool call, y/N consent."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

import httpx

from cards.a2ui_text import render_text
from larkbot.agent import Agent
from larkbot.chat_commands import Resume, run_command
from larkbot.chat_consent import TuiConsentProvider
from larkbot.config import Settings
from larkbot.context import RequestContext
from larkbot.events import (
    AgentEvent,
    AttachmentReady,
    ErrorEvent,
    FinalAnswer,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
    UiPayload,
)
from larkbot.llm_check import key_problem
from larkbot.logs import configure_logging
from larkbot.memory.commands import local_command
from larkbot.policy.secrets import SecretScrubber, make_undumpable
from larkbot.preflight import check_writable
from larkbot.runtime_factory import open_core
from larkbot.terminal import new_session_id, read_line

HELP = "Type a message; /help lists the commands. /exit quits (so does end of input)."


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TerminalView:
    """Prints agent events: streamed text, tool lines, UI payloads, errors."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.at_line_start = True
        self.thinking = False  # inside a streamed "💭" thought (llm.show_thinking)
        self.failed = False

    def end_line(self) -> None:
        """End a streamed line, if one is open."""
        if not self.at_line_start:
            print(file=self.out, flush=True)
            self.at_line_start = True

    def line(self, text: str) -> None:
        """Print a full line (after ending a streamed one)."""
        self.end_line()
        print(text, file=self.out, flush=True)

    def show(self, event: AgentEvent) -> None:
        """Render one event."""
        if isinstance(event, ThinkingDelta):
            if not self.thinking:
                self.end_line()
                self.out.write("  💭 ")
                self.thinking = True
            self.out.write(event.text.replace("\n", "\n     "))
            self.out.flush()
            self.at_line_start = False
            return
        if self.thinking:  # the thought ends where anything else begins
            self.thinking = False
            self.end_line()
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self.at_line_start = event.text.endswith("\n")
        elif isinstance(event, ToolStarted):
            self.line(f"  ⚙ {event.name}({_short(event.arguments)})")
        elif isinstance(event, ToolFinished):
            mark = "✗" if event.is_error else "✓"
            size = f"{len(event.content)} chars, {event.elapsed:.1f} s"
            self.line(f"  {mark} {event.name}: {_short(event.content)} ({size})")
        elif isinstance(event, UiPayload):
            self._show_ui(event.ui)
        elif isinstance(event, AttachmentReady):
            a = event.attachment
            caption = f" — {a.caption}" if a.caption else ""
            self.line(f"  📎 {a.kind} from {event.tool}: {a.path}{caption}")
        elif isinstance(event, ErrorEvent):
            self.failed = True
            self.line(f"✗ {event.message}")
        elif isinstance(event, FinalAnswer):
            self.end_line()

    def _show_ui(self, ui: dict[str, Any]) -> None:
        try:
            self.line(render_text(ui))
        except Exception as err:  # a bad payload must not end the chat
            self.line(f"  [card could not be rendered: {err}]")


async def chat_loop(agent: Agent, interactive: bool, out: TextIO | None = None) -> int:
    """Read lines until /exit or end of input; run each as a turn. 1 if any turn failed."""
    view = TerminalView(out)
    session, resume = new_session_id(), Resume(agent.store)
    if interactive:
        print(f"larkbot chat — {HELP}", file=view.out)
    while True:
        line = await read_line("› " if interactive else "")
        if line is None:
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        if not interactive:
            view.line(f"› {text}")  # piped input: show what was asked next to the answer
        done = await run_command(text, session, resume)
        if done is not None:
            session, lines = done
            for shown in lines:
                view.line(shown)
            continue
        ctx = RequestContext.local_owner(session)  # the terminal's user is the owner
        if (reply := await local_command(agent.recall, text, ctx)) is not None:
            view.line(reply)  # /memory, /forget
            continue
        async for event in agent.stream_chat(session, text, ctx):
            view.show(event)
    return 1 if view.failed else 0


async def _main(settings: Settings, level: str, scrub: Callable[[str], str]) -> int:
    from larkbot.scheduler.wiring import writer_scheduler

    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # piped: plain lines, y/N
        async with open_core(settings, "cli") as core, writer_scheduler(core):
            await say_key_problem(settings, core.http)
            return await chat_loop(core.agent(TuiConsentProvider()), sys.stdin.isatty())
    from larkbot.chat_repl import RichConsent, new_console, rich_loop
    from larkbot.chat_view import LineReader, RichView, route_logs_to

    view = RichView(new_console(), render_text)
    route_logs_to(view, level, scrub)  # warnings: the status line, not the conversation
    reader = LineReader()
    banner = f"larkbot chat — {settings.llm.model} at {settings.llm.base_url}"
    async with open_core(settings, "cli") as core, writer_scheduler(core):
        await say_key_problem(settings, core.http)
        return await rich_loop(core.agent(RichConsent(view, reader)), view, reader, banner)


async def say_key_problem(settings: Settings, http: httpx.AsyncClient) -> None:
    """Before the first question: a missing or refused LLM key, and its fix (on stderr)."""
    problem = await key_problem(settings, http)
    if problem is not None:
        print(f"✗ {problem.problem}\n  → {problem.fix}", file=sys.stderr, flush=True)


def run_chat(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot chat`."""
    check_writable(settings)
    fmt = "json" if settings.logging.format == "json" else "console"
    level = settings.logging.level if settings.logging.level != "info" else "warning"
    # info logs would interleave with the conversation; secret values never reach a log line
    scrub = SecretScrubber(lambda: settings).text
    configure_logging(level, fmt, scrub)
    make_undumpable()  # a tool's child process cannot read our environment (the keys)
    return asyncio.run(_main(settings, level, scrub))
