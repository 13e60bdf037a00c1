"""WebService: the web interface's parts (auth, runs, consent, agent), started with `serve`."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import TYPE_CHECKING, Any

from larkbot.context import RequestContext
from larkbot.logs import get_logger
from larkbot.storage.signals import make_signal
from larkbot.web.agui import RunTranslator, encode
from larkbot.web.auth import LoginLimiter, WebAuth
from larkbot.web.consent import WebConsentProvider
from larkbot.web.consent_board import ConsentBoard
from larkbot.web.runs import Run, RunRegistry
from tools.base import Attachment

if TYPE_CHECKING:
    from larkbot.agent import Agent
    from larkbot.app import App

log = get_logger(__name__)
SESSION_ID = re.compile(r"^web:[A-Za-z0-9_.-]{1,64}$")
WEB_SENDER = "web"  # the web user is this bot's owner (a personal agent)


def new_session_id() -> str:
    """A fresh web session id."""
    return f"web:{uuid.uuid4().hex[:16]}"


def web_context(session_id: str) -> RequestContext:
    """The request context of a web turn: interface web, the owner."""
    return RequestContext("web", session_id, sender_id=WEB_SENDER, is_owner=True)


class WebService:
    """Built by `mount_web`; `start` once the App's core exists, `stop` before it closes."""

    def __init__(self, app: App, ping_seconds: float = 15.0) -> None:
        self.app = app
        self.ping_seconds = ping_seconds
        self.runs = RunRegistry()
        self.limiter = LoginLimiter(app.settings.web.trusted_proxies)
        self.auth: WebAuth | None = None
        self.board: ConsentBoard | None = None
        self.agent: Agent | None = None

    @property
    def ready(self) -> bool:
        """Started and the App takes work (not starting or draining)."""
        return self.agent is not None and self.app.ready

    async def start(self) -> None:
        """Token (generated and printed once if needed), consent board, the web agent."""
        core = self.app.core
        cfg = self.app.settings.web
        self.auth = WebAuth(core.db, cfg.token.get_secret_value())
        await self.auth.init()
        signal = make_signal(core.db, self.app.settings.storage.redis_url)
        self.board = ConsentBoard(core.db, signal, cfg.consent_timeout_seconds)
        await self.board.init()
        self.agent = core.agent(WebConsentProvider(self.board, self.runs), "web")
        log.info("web_ready", signal=type(signal).__name__)

    async def stop(self, drain_seconds: float) -> None:
        """Let running turns finish (bounded), cancel the rest, stop listening."""
        if not await self.runs.join(drain_seconds):
            log.warning("web_turns_cancelled", count=len(self.runs.active()))
        await self.runs.close()
        if self.board is not None:
            await self.board.close()

    def start_turn(self, session_id: str, message: str) -> Run:
        """Start a turn as a run of its own; the caller streams its events."""
        agent = self.agent
        assert agent is not None

        async def body(run: Run) -> None:
            def file_url(att: Attachment) -> str:
                run.attachments.append(att)
                return f"/api/runs/{run.run_id}/files/{len(run.attachments) - 1}"

            tr = RunTranslator(run.session_id, run.run_id, file_url)

            def push(events: list[Any]) -> None:
                for event in events:
                    run.emit(encode(event))

            run.custom = lambda name, value: push(tr.custom(name, value))
            push(tr.started_event())
            try:
                async for event in agent.stream_chat(session_id, message, web_context(session_id)):
                    push(tr.translate(event))
            except asyncio.CancelledError:
                push(tr.error("The turn was stopped.", "cancelled"))
                raise
            except Exception as err:  # stream_chat reports its own failures; this is a bug
                log.error("web_turn_failed", exc_info=True)
                push(tr.error(f"Something went wrong in larkbot ({type(err).__name__})."))

        return self.runs.start(session_id, body, " ".join(message.split())[:80])
