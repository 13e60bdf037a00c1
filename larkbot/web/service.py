"""WebService: the web interface's parts (auth, runs, consent, agent), started with `serve`."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from larkbot.context import RequestContext
from larkbot.logs import get_logger
from larkbot.storage.sessions import session_title
from larkbot.storage.signals import make_signal
from larkbot.storage.user_tokens import TokenStore
from larkbot.web.agui import RunTranslator, encode
from larkbot.web.auth import LoginLimiter, WebAuth
from larkbot.web.chat_request import ChatRequest
from larkbot.web.consent import WebConsentProvider
from larkbot.web.consent_board import ConsentBoard
from larkbot.web.runs import Run, RunRegistry
from tools.base import Attachment

if TYPE_CHECKING:
    from larkbot.agent import Agent
    from larkbot.config import Settings
    from larkbot.runtime_factory import Core

log = get_logger(__name__)
WEB_SENDER = "web"  # the web user is this bot's owner (a personal agent)


def web_context(session_id: str) -> RequestContext:
    """The request context of a web turn: interface web, the owner."""
    return RequestContext("web", session_id, sender_id=WEB_SENDER, is_owner=True)


class WebHost(Protocol):
    """What `serve` hands the web channel (its App is one): the settings, the shared core once
    started, and whether it takes work now. The web knows nothing else of the process."""

    @property
    def settings(self) -> Settings:
        """The process's settings."""
        ...

    @property
    def core(self) -> Core:
        """Database, sessions, tool runtime and agent factory (after the host started)."""
        ...

    @property
    def ready(self) -> bool:
        """True while the host takes work (not starting or draining)."""
        ...


class WebService:
    """Built by `mount_web`; `start` once the host's core exists, `stop` before it closes."""

    def __init__(self, host: WebHost, ping_seconds: float = 15.0) -> None:
        self.host = host
        self.ping_seconds = ping_seconds
        self.runs = RunRegistry()
        self.limiter = LoginLimiter(host.settings.web.trusted_proxies)
        self.auth: WebAuth | None = None
        self.board: ConsentBoard | None = None
        self.agent: Agent | None = None
        self.tokens: TokenStore | None = None  # people's Lark grants, listed by GET /api/auth

    @property
    def ready(self) -> bool:
        """Started and the host takes work (not starting or draining)."""
        return self.agent is not None and self.host.ready

    async def start(self) -> None:
        """Token (generated and printed once if needed), consent board, grants, the web agent."""
        core = self.host.core
        cfg = self.host.settings.web
        self.auth = WebAuth(core.db, cfg.token.get_secret_value())
        await self.auth.init()
        signal = make_signal(core.db, self.host.settings.storage.redis_url)
        self.board = ConsentBoard(core.db, signal, cfg.consent_timeout_seconds)
        await self.board.init()
        # built and its table made once here: GET /api/auth only reads (no DDL per request)
        self.tokens = TokenStore(core.db, None, self.host.settings.lark.app_id)
        await self.tokens.init()
        self.agent = core.agent(WebConsentProvider(self.board, self.runs), "web")
        log.info("web_ready", signal=type(signal).__name__)

    async def stop(self, drain_seconds: float) -> None:
        """Let running turns finish (bounded), cancel the rest, stop listening."""
        if not await self.runs.join(drain_seconds):
            log.warning("web_turns_cancelled", count=len(self.runs.active()))
        await self.runs.close()
        if self.board is not None:
            await self.board.close()

    def start_turn(self, chat: ChatRequest) -> Run:
        """Start a turn as a run of its own; the caller streams its events."""
        agent = self.agent
        assert agent is not None
        session_id, message = chat.session_id, chat.message

        async def body(run: Run) -> None:
            def file_url(att: Attachment) -> str:
                run.attachments.append(att)
                return f"/api/runs/{run.run_id}/files/{len(run.attachments) - 1}"

            tr = RunTranslator(chat.thread_id, run.run_id, file_url)

            def push(events: list[Any]) -> None:
                for event in events:
                    run.emit(encode(event))

            run.custom = lambda name, value: push(tr.custom(name, value))
            push(tr.started_event())
            try:
                async for event in agent.stream_chat(session_id, message, web_context(session_id)):
                    push(tr.translate(event))
            except asyncio.CancelledError:  # stopped (or the server drains): not a failure
                push(tr.cancelled())
                raise
            except Exception as err:  # stream_chat reports its own failures; this is a bug
                log.error("web_turn_failed", exc_info=True)
                push(tr.error(f"Something went wrong in larkbot ({type(err).__name__})."))

        # the title the session list shows once the turn is stored (a first turn runs unstored)
        title = session_title([{"role": "user", "content": message}])
        return self.runs.start(session_id, body, title, chat.run_id)
