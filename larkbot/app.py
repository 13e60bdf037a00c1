"""App: builds and owns everything `larkbot serve` runs, with `start()` / `drain()` / `stop()`."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from larkbot.config import Settings
from larkbot.consent import ConsentProvider, NobodyToAsk
from larkbot.errors import LarkBotError
from larkbot.lark.approval import LarkApprovals
from larkbot.lark.audit import AuditLog
from larkbot.lark.client import LarkClient
from larkbot.lark.commands import UNSIGNED_REFUSAL, Commands
from larkbot.lark.dispatcher import Dispatcher
from larkbot.lark.inbound import MESSAGE_EVENT, normalize
from larkbot.lark.journal import open_journal
from larkbot.lark.owners import Owners
from larkbot.lark.people import Directory
from larkbot.lark.render import reply_uuid, text_content
from larkbot.lark.turn_input import TurnInputs
from larkbot.lark.turns import PlainReplyView, TurnView, ViewFactory
from larkbot.lark.webhook import CARD_ACTION_TRIGGER
from larkbot.lark.welcome import RECALLED, WELCOME_EVENTS, Welcomer
from larkbot.logs import get_logger
from larkbot.model_status import status_text
from larkbot.runtime_factory import Core, build_core
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.app")

CardHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Hook = Callable[[], Awaitable[None]]
PURGE_EVERY = 3600.0


class NotAccepting(LarkBotError):
    """Starting or draining: the event is not taken, Lark must redeliver it (503 / error ACK)."""


class App:
    """The serve process's object graph. Other subsystems add start/stop hooks, not new fields."""

    def __init__(self, settings: Settings, *, lease_seconds: float = 60.0) -> None:
        self.settings = settings
        self.lease_seconds = lease_seconds
        self.ready = False
        self.bot_open_id = ""
        self.client: LarkClient | None = None
        self.card_handler: CardHandler | None = None  # the cards helper's approval callbacks
        self.view_factory: ViewFactory | None = None  # None: chosen in start() from settings
        self.on_start: list[Hook] = []
        self.on_stop: list[Hook] = []
        self.ws: Any = None
        self._core: Core | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()  # welcomes, sent after the ack
        from larkbot.scheduler.hooks import install_scheduler

        install_scheduler(self)  # start/stop hooks; registers services["scheduler"]
        self.approvals: LarkApprovals | None = None
        from larkbot.desktop import DesktopServer

        desktop = DesktopServer(settings.computer_use, lambda: self.core.runtime.services)
        self.on_start.append(desktop.start)  # computer_use.start_xvfb: serve's own Xvfb
        self.on_stop.append(desktop.stop)

    @property
    def started(self) -> bool:
        """True between a successful `build_core` in `start()` and `stop()`."""
        return self._core is not None

    @property
    def core(self) -> Core:
        """Database, http client, registry, provider and sessions (after `start`)."""
        assert self._core is not None, "App.start() first"
        return self._core

    async def start(self) -> None:
        """Open storage, fetch the bot's identity once, wire the agent, recover unfinished turns."""
        self._core = await build_core(self.settings, "lark")
        try:
            await self._wire(self._core)
        except BaseException:
            await self._close()  # hooks (scheduler), writers and clients started so far
            raise
        self.ready = True
        log.info("app_ready", bot_open_id=self.bot_open_id, mode=self.settings.lark.mode)

    async def _wire(self, core: Core) -> None:
        s = self.settings
        if s.lark.configured:
            self.client = LarkClient.from_config(core.http, s.lark)
            core.runtime.services["lark_client"] = self.client
            await self._fetch_bot_identity()
        else:
            log.warning(
                "lark_not_configured",
                hint="set lark.app_id and lark.app_secret (LARK_APP_ID / LARK_APP_SECRET): "
                "events are verified and acknowledged, but the bot cannot reply",
            )
        if s.lark.mode == "webhook" and not s.lark.encrypt_key.get_secret_value():
            log.warning(
                "lark_events_unsigned",
                problem="lark.encrypt_key is not set: Lark sends events without a signature, "
                "so a captured or forged event cannot be told from a fresh one",
                effect="until it is set, nobody's message has owner powers here: no tools with "
                "side effects, no private data, no /claim, card buttons do nothing",
                hint="set lark.encrypt_key (Lark console → Events & Callbacks → Encryption "
                "strategy), or use lark.mode: websocket",
            )
        self.journal = open_journal(core.db, s.storage.redis_url, self.lease_seconds)
        self.owners = Owners(core.db, s.owner.open_ids)
        self.audit = AuditLog(core.db)
        self.directory = Directory(self.client)
        self.welcomer = Welcomer(core.db, self.client, self.owners, self.directory)
        for part in (self.journal, self.owners, self.audit, self.welcomer):
            await part.init()
        inputs = TurnInputs(self.client, self.directory, lambda: self.settings)
        inputs.http = core.http
        consent: ConsentProvider = NobodyToAsk()
        if self.client is not None:  # the policy's Asks become Approve / Deny cards
            self.approvals = LarkApprovals(
                self.client, self.owners.check, lambda: self.settings.lark.approval_timeout_seconds
            )
            consent, self.card_handler = self.approvals, self.approvals.handle_card
        self.agent = core.agent(consent, "lark", audit=self.audit)
        self.dispatcher = Dispatcher(
            agent=self.agent,
            journal=self.journal,
            owners=self.owners,
            commands=Commands(
                self.owners,
                self.agent.reset,
                lambda sid: status_text(core.live.get(), core.provider, core.usage, sid),
            ),
            view_factory=self._view,
            lark=lambda: self.settings.lark,
            inputs=inputs,
            sessions=core.store,
            limits=lambda: self.settings.limits,
            notify=self._notify,
        )
        for hook in self.on_start:
            await hook()
        if self.client is not None:
            await self.dispatcher.recover()
            self._sweeper = asyncio.create_task(self._sweep(), name="lark-journal-sweeper")
        if s.lark.mode == "websocket" and self.client is not None:
            from larkbot.lark.ws import LarkLongConnection

            secret = s.lark.app_secret.get_secret_value()
            self.ws = LarkLongConnection(s.lark.app_id, secret, s.lark.domain, self.submit)
            self.ws.start()

    async def _fetch_bot_identity(self) -> None:
        assert self.client is not None
        try:
            info = await self.client.bot_info()
            self.bot_open_id = str(info.get("open_id", ""))
        except Exception as err:  # mention detection needs it; DMs work without
            log.error(
                "lark_bot_info_failed",
                error=f"{type(err).__name__}: {err}",
                hint="check lark.app_id/app_secret and that the bot capability is enabled; "
                "group @-mentions are not recognised until this works (restart to retry)",
            )

    async def _notify(self, msg: Any, text: str) -> None:
        """A short text reply outside any turn (e.g. why a message is not answered)."""
        if self.client is not None:
            await self.client.reply(
                msg.message_id,
                "text",
                text_content(text),
                uuid=reply_uuid(msg.message_id, "notice"),
                reply_in_thread=bool(msg.thread_id),
            )

    def _view(self, msg: Any, ctx: Any) -> TurnView:
        if self.view_factory is None:
            self.view_factory = self._default_view_factory()
        return self.view_factory(msg, ctx)

    def _default_view_factory(self) -> ViewFactory:
        """StreamingCardView when `lark.streaming` is on and the cards module is present."""
        assert self.client is not None
        client = self.client
        if self.settings.lark.streaming:
            try:  # the cards helper's module (issue 4), when present
                streaming = importlib.import_module("larkbot.lark.streaming")
                factory: ViewFactory = streaming.make_view_factory(client, self.settings.lark)
                return factory
            except (ImportError, AttributeError):
                pass
        return lambda msg, ctx: PlainReplyView(client, msg)

    async def submit(self, envelope: dict[str, Any], signed: bool = True) -> Any:
        """Hand an authenticated event envelope to the pipeline (webhook and long connection).

        `signed` False: a webhook event without a signature (no lark.encrypt_key), whose
        freshness nobody can check; its turn runs with no owner powers.
        """
        if not self.ready:  # e.g. SIGTERM arrived while the body was read: never 200 and drop
            raise NotAccepting("not ready")
        event_type = envelope.get("header", {}).get("event_type")
        if event_type == CARD_ACTION_TRIGGER:  # long connection: card actions come this way
            return await self.handle_card(envelope, signed)
        if event_type == RECALLED:  # its queued or running turn stops, unanswered
            message_id = str((envelope.get("event") or {}).get("message_id") or "")
            return await self.dispatcher.recall(message_id)
        if event_type in WELCOME_EVENTS and self.client is not None:
            greet = self.welcomer.greet(event_type, envelope.get("event") or {})
            task = asyncio.create_task(greet, name="lark-welcome")
            self._background.add(task)
            task.add_done_callback(self._background_done)
            return "welcome"
        if event_type != MESSAGE_EVENT:
            return "ignored"  # other events: acknowledged, nothing to do
        try:
            msg = normalize(envelope, self.bot_open_id)
        except Exception:  # sender-controlled shapes must never fail the request
            log.error("lark_normalize_failed", exc_info=True)
            return "ignored"
        if msg is None:
            return "ignored"
        if not signed:
            msg = dataclasses.replace(msg, signed=False)
        if self.client is None:
            log.warning("lark_reply_impossible", reason="lark.app_id/app_secret not configured")
            return "unconfigured"
        outcome = await self.dispatcher.accept(msg)
        if outcome == "draining":
            raise NotAccepting(outcome)
        return outcome

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("lark_background_failed", exc_info=task.exception())

    async def handle_card(self, envelope: dict[str, Any], signed: bool = True) -> dict[str, Any]:
        """A verified `card.action.trigger`; the cards helper installs `card_handler`."""
        if self.card_handler is None:
            return {}
        if not signed:  # an Approve click nobody can prove fresh must not approve anything
            return {"toast": {"type": "error", "content": UNSIGNED_REFUSAL}}
        return await self.card_handler(envelope)

    async def _sweep(self) -> None:
        """Retake turns whose replica died (expired leases) and purge old journal entries."""
        last_purge = 0.0
        while True:
            await asyncio.sleep(self.lease_seconds / 2)
            try:
                await self.dispatcher.recover()
                if time.monotonic() - last_purge > PURGE_EVERY:
                    last_purge = time.monotonic()
                    await self.journal.purge()
            except Exception:
                log.warning("lark_sweep_failed", exc_info=True)

    async def drain(self, timeout: float | None = None) -> bool:
        """Stop taking events (healthz 503) and let in-flight turns finish within `timeout`."""
        self.ready = False
        if self._core is None or not hasattr(self, "dispatcher"):
            return True
        return await self.dispatcher.drain(timeout or self.settings.server.drain_seconds)

    async def stop(self) -> None:
        """Drain (if not yet), then close everything in reverse order of creation."""
        if self._core is None:
            return
        await self.drain()
        await self._close()

    async def _close(self) -> None:
        """Close what was started, in reverse order; safe on a partly wired App."""
        if self._core is None:
            return
        if self.ws is not None:
            await self.ws.aclose()
        if self._sweeper is not None:
            await cancel_and_wait(self._sweeper)
        if self.approvals is not None:
            self.approvals.cancel_all()
        for task in list(self._background):
            await cancel_and_wait(task)
        for hook in reversed(self.on_stop):
            try:
                await hook()
            except Exception:
                log.warning("stop_hook_failed", exc_info=True)
        for part in (getattr(self, "audit", None), getattr(self, "journal", None)):
            if part is not None:
                await part.close()
        await self._core.aclose()
        self._core = None
