"""`larkbot chat` on a real terminal: colour, a spinner while the model thinks, the answer as
rendered markdown while it streams, tool lines, and warnings in a status line (not in the
transcript)."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable, MutableMapping
from typing import Any, TextIO

import structlog
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from larkbot.events import (
    AgentEvent,
    AttachmentReady,
    ErrorEvent,
    TextDelta,
    ToolFinished,
    ToolStarted,
    UiPayload,
)
from larkbot.logs import secret_redactor


class LineReader:
    """One stdin reader thread for the whole session, so a question abandoned by Ctrl-C leaves
    no orphan read behind to swallow the next line typed."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stdin
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, name="larkbot-stdin", daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                line = self._stream.readline()
            except (OSError, ValueError):
                line = ""
            self._loop.call_soon_threadsafe(self._lines.put_nowait, line or None)
            if not line:  # end of input (Ctrl-D)
                return

    async def read(self) -> str | None:
        """The next line without its newline; None at end of input."""
        line = await self._lines.get()
        if line is None:
            self._lines.put_nowait(None)  # every later read sees the end too
            return None
        return line.rstrip("\n")


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RichView:
    """Renders one turn at a time in a rich Live region; finished parts are printed above it."""

    def __init__(self, console: Console, render_ui: Any = None) -> None:
        self.console = console
        self.render_ui = render_ui
        self.text = ""  # the answer being streamed, as markdown
        self.state = ""  # the spinner's caption; empty: no spinner
        self.warning = ""
        self.failed = False
        self.live: Live | None = None
        self._lock = threading.Lock()  # warnings can come from other threads (MCP stderr)

    def _render(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self.text:
            parts.append(Markdown(self.text))
        if self.state:
            parts.append(Spinner("dots", Text(self.state, style="cyan"), style="cyan"))
        if self.warning:
            parts.append(Text(f"⚠ {self.warning}", style="yellow"))
        return Group(*parts)

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._render(), refresh=True)

    def start(self, state: str = "thinking…") -> None:
        """Begin a turn (or resume after a question): the spinner shows at once."""
        self.state = state
        self.live = Live(
            self._render(),
            console=self.console,
            refresh_per_second=12,
            vertical_overflow="visible",
        )
        self.live.start()

    def _print(self, renderable: RenderableType) -> None:
        self.console.print(renderable)

    def _commit_text(self) -> None:
        """Print the streamed text so far above the live region (before a tool line)."""
        if self.text:
            self._print(Markdown(self.text))
            self.text = ""

    def show(self, event: AgentEvent) -> None:
        """Render one agent event."""
        if isinstance(event, TextDelta):
            self.text += event.text
            self.state = ""
        elif isinstance(event, ToolStarted):
            self._commit_text()
            args = _short(str(event.arguments))
            self._print(Text(f"  ⚙ {event.name}({args})", style="dim"))
            self.state = f"running {event.name}…"
        elif isinstance(event, ToolFinished):
            mark, style = ("✗", "red") if event.is_error else ("✓", "green")
            line = f"  {mark} {event.name}: {_short(event.content, 70)} ({event.elapsed:.1f} s)"
            self._print(Text(line, style=style))
            self.state = "thinking…"
        elif isinstance(event, UiPayload):
            self._commit_text()
            self._print(self._ui_text(event.ui))
        elif isinstance(event, AttachmentReady):
            self._print(Text(f"  📎 {event.attachment.path}", style="blue"))
        elif isinstance(event, ErrorEvent):
            # the error ends the turn: clear the spinner and the status line (its llm_failed
            # says the same) before printing, or the live region redraws them under the error
            self.failed = True
            self._commit_text()
            self.state, self.warning = "", ""
            self._refresh()  # the live region redraws what it last had under anything printed
            self._print(Text(f"✗ {event.message}", style="bold red"))
            self._stop_live()  # later warnings of this turn go nowhere; `end` clears them
            return
        self._refresh()

    def _ui_text(self, ui: dict[str, Any]) -> RenderableType:
        if self.render_ui is not None:
            try:
                return Text(self.render_ui(ui))
            except Exception as err:  # a bad payload must not end the chat
                return Text(f"  [card could not be rendered: {err}]", style="yellow")
        return Text(f"  [a card was produced ({', '.join(ui)})]", style="dim")

    def _stop_live(self) -> None:
        with self._lock:  # a warning from another thread must not refresh a stopped region
            if self.live is not None:
                self.live.update(self._render(), refresh=True)
                self.live.stop()
                self.live = None

    def pause(self) -> None:
        """Stop the live region (to ask a question); what was streamed stays on screen."""
        if self.live is not None:
            self._commit_text()
            self.state = ""
            self._stop_live()

    def end(self, stopped: bool = False) -> None:
        """Finish the turn: the answer stays, the spinner and the status line go."""
        self.state, self.warning = "", ""
        self._stop_live()
        self.text = ""
        if stopped:
            self._print(Text("⏹ stopped. The conversation is kept; Ctrl-D quits.", style="dim"))

    def status(self, message: str) -> None:
        """Show a warning in the status line under the answer (replacing the previous one)."""
        with self._lock:
            self.warning = _short(message, 110)
            self._refresh()


def route_logs_to(
    view: RichView, level: str = "warning", scrub: Callable[[str], str] | None = None
) -> None:
    """Send every log event (ours and third-party) to the view's status line, not the screen."""

    def to_status(_: Any, __: str, event: MutableMapping[str, Any]) -> Any:
        name = event.pop("event", "")
        event.pop("level", None)
        detail = " ".join(f"{k}={v}" for k, v in event.items() if k not in ("timestamp",))
        view.status(f"{name} {detail}".strip())
        raise structlog.DropEvent

    threshold = getattr(logging, level.upper(), logging.WARNING)
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, secret_redactor(scrub), to_status],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.ReturnLoggerFactory(),
        cache_logger_on_first_use=False,
    )

    class _ToStatus(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            view.status(f"{record.name}: {record.getMessage()}")

    root = logging.getLogger()
    root.handlers = [_ToStatus(threshold)]
    root.setLevel(threshold)
