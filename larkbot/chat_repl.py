"""The interactive `larkbot chat` loop: Ctrl-C stops the answer and keeps the conversation;
Ctrl-C at the prompt, or Ctrl-D, quits. The consent question says what each answer grants."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

from rich.console import Console
from rich.text import Text

from larkbot.agent import Agent
from larkbot.chat_commands import Resume, run_command
from larkbot.chat_view import LineReader, RichView
from larkbot.consent import ConsentAnswer, ConsentRequest
from larkbot.context import RequestContext
from larkbot.memory.commands import local_command
from larkbot.terminal import new_session_id

HELP = "Type a message; /help lists the commands. Ctrl-C stops an answer, Ctrl-D quits."
KEYS = (
    "Keys: Ctrl-C stops an answer (the conversation is kept); Ctrl-C at the prompt or Ctrl-D quits."
)
PROMPT = Text("› ", style="bold cyan")


class RichConsent:
    """Asks in the terminal, naming what a yes grants: this call, or the scope for the session."""

    def __init__(self, view: RichView, reader: LineReader) -> None:
        self.view = view
        self.reader = reader
        self._lock = asyncio.Lock()  # one question at a time on one terminal

    async def ask(self, request: ConsentRequest) -> str:
        """'once', 'session' or 'no'."""
        console = self.view.console
        async with self._lock:
            self.view.pause()
            head = f"⚠ {request.tool.name} wants to: {request.description}"
            console.print(Text(head, style="bold yellow"))
            if request.always:
                note = "  This kind of call is asked every time; a yes covers this call only."
                choices, options = {"y": "once"}, "[y] yes, this call  [N] no"
            else:
                scope = request.scope
                what = f"everything under {scope}" if scope.startswith("/") else f"'{scope}'"
                note = (
                    f"  [y] allows this one call; [s] allows {what} for the rest of this session."
                )
                choices = {"y": "once", "s": "session"}
                options = "[y] this call  [s] this session  [N] no"
            console.print(Text(note, style="dim"))
            console.print(Text(f"  {options} ? ", style="bold"), end="")
            answer = await self.reader.read()
            self.view.start("running…")
        return choices.get((answer or "").strip().lower()[:1], "no")

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        """The consent provider interface: only an `s` answer is remembered for the session."""
        choice = await self.ask(request)
        if choice == "no":
            return ConsentAnswer(False, "the user declined")
        return ConsentAnswer(
            True, f"allowed by the user ({choice})", for_session=choice == "session"
        )


async def _turn(agent: Agent, view: RichView, session: str, text: str) -> None:
    view.start()
    try:
        ctx = RequestContext.local_owner(session)
        async for event in agent.stream_chat(session, text, ctx):
            view.show(event)
    except asyncio.CancelledError:
        view.end(stopped=True)
        raise
    view.end()


async def _first_line(reader: LineReader, quit_: asyncio.Event) -> str | None:
    """The next line, or None on Ctrl-D or when Ctrl-C at the prompt asked to quit."""
    read = asyncio.ensure_future(reader.read())
    stop = asyncio.ensure_future(quit_.wait())
    done, pending = await asyncio.wait({read, stop}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return read.result() if read in done else None


async def rich_loop(agent: Agent, view: RichView, reader: LineReader, banner: str) -> int:
    """Read and answer until Ctrl-D, /exit or Ctrl-C at the prompt. 1 if any turn failed."""
    console, loop = view.console, asyncio.get_running_loop()
    session, quit_ = new_session_id(), asyncio.Event()
    resume = Resume(agent.store)
    turn: asyncio.Task[None] | None = None

    def on_interrupt() -> None:
        if turn is not None and not turn.done():
            turn.cancel()  # stop this answer only
        else:
            quit_.set()

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    console.print(Text(banner, style="bold"))
    console.print(HELP, style="dim")
    try:
        while True:
            console.print(PROMPT, end="")
            line = await _first_line(reader, quit_)
            if line is None:
                console.print()
                break
            text = line.strip()
            if text in ("/exit", "/quit"):
                break
            if not text:
                continue
            done = await run_command(text, session, resume, KEYS)
            if done is not None:  # the consent kept per session follows `session` (gate)
                session, lines = done
                for shown in lines:
                    console.print(Text(shown), style="dim")
                continue
            ctx = RequestContext.local_owner(session)
            if (reply := await local_command(agent.recall, text, ctx)) is not None:
                console.print(reply)  # /memory, /forget
                continue
            turn = asyncio.create_task(_turn(agent, view, session, text))
            await asyncio.wait({turn})
            turn = None
    finally:
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(signal.SIGINT)
    return 1 if view.failed else 0


def new_console() -> Any:
    """The terminal console (colour unless NO_COLOR or not a terminal)."""
    return Console(highlight=False, soft_wrap=False)
