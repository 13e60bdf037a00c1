"""App: the composition root of `larkbot serve` — every part built in one typed place, in order.

`start()` builds the parts in dependency order (core → Lark client → journal, owners, audit →
approvals → agent → dispatcher → scheduler → recovery sweeper → long connection), each one
registered with an exit stack as it starts, so a failure closes exactly what had started, in
reverse; `stop()` drains, then unwinds the same stack. `extensions` are typed async context
managers entered last (e.g. another interface), closed first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any

from larkbot.agent import Agent
from larkbot.config import Settings
from larkbot.consent import ConsentProvider, NobodyToAsk
from larkbot.context import RequestContext
from larkbot.desktop import DesktopServer
from larkbot.errors import LarkBotError
from larkbot.lark.approval import LarkApprovals
from larkbot.lark.audit import AuditLog
from larkbot.lark.client import LarkClient
from larkbot.lark.commands import Commands
from larkbot.lark.dispatcher import Dispatcher
from larkbot.lark.inbound import MESSAGE_EVENT, InboundMessage, normalize
from larkbot.lark.journal import InboundJournal
from larkbot.lark.journal_redis import open_journal
from larkbot.lark.owners import Owners
from larkbot.lark.people import Directory
from larkbot.lark.streaming import make_view_factory
from larkbot.lark.turn_input import TurnInputs
from larkbot.lark.turns import TurnView, ViewFactory
from larkbot.lark.webhook import CARD_ACTION_TRIGGER
from larkbot.lark.welcome import RECALLED, WELCOME_EVENTS, Welcomer
from larkbot.lark.ws import LarkLongConnection
from larkbot.logs import get_logger
from larkbot.runtime_factory import Core, build_core
from larkbot.scheduler.service import ScheduleService
from larkbot.scheduler.wiring import leading_scheduler
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.app")

Extension = Callable[["App"], AbstractAsyncContextManager[object]]
PURGE_EVERY = 3600.0


class NotAccepting(LarkBotError):
    """Starting or draining: the event is not taken, Lark must redeliver it (503 / error ACK)."""


@dataclass(frozen=True)
class Parts:
    """Everything a started App runs, built in `App.start` in this order."""

    core: Core
    client: LarkClient | None
    journal: InboundJournal
    owners: Owners
    audit: AuditLog
    directory: Directory
    welcomer: Welcomer
    approvals: LarkApprovals | None
    agent: Agent
    dispatcher: Dispatcher
    scheduler: ScheduleService | None


class App:
    """The serve process's object graph; the parts exist between `start()` and `stop()`."""

    def __init__(
        self,
        settings: Settings,
        *,
        lease_seconds: float = 60.0,
        view_factory: ViewFactory | None = None,
        extensions: Sequence[Extension] = (),
    ) -> None:
        self.settings = settings
        self.lease_seconds = lease_seconds
        self.ready = False
        self.bot_open_id = ""
        self._view_factory = view_factory
        self._extensions = tuple(extensions)
        self._parts: Parts | None = None
        self._stack: AsyncExitStack | None = None
        self._background: set[asyncio.Task[Any]] = set()  # welcomes, sent after the ack

    @property
    def parts(self) -> Parts:
        """The running parts (after `start`)."""
        assert self._parts is not None, "App.start() first"
        return self._parts

    @property
    def core(self) -> Core:
        """Database, http client, registry, provider and sessions."""
        return self.parts.core

    @property
    def client(self) -> LarkClient | None:
        """The Lark client (None when lark.app_id/app_secret are not configured)."""
        return self._parts.client if self._parts is not None else None

    @property
    def journal(self) -> InboundJournal:
        """The inbound journal (exactly-once claims)."""
        return self.parts.journal

    @property
    def owners(self) -> Owners:
        """Who the owners are."""
        return self.parts.owners

    @property
    def audit(self) -> AuditLog:
        """The policy's audit log."""
        return self.parts.audit

    @property
    def agent(self) -> Agent:
        """The Lark agent."""
        return self.parts.agent

    @property
    def dispatcher(self) -> Dispatcher:
        """Per-session ordered turns."""
        return self.parts.dispatcher

    async def start(self) -> None:
        """Build every part in order; on any failure close what started, in reverse."""
        stack = AsyncExitStack()
        try:
            self._parts = await self._build(stack)
            if self._parts.client is not None:
                await self._parts.dispatcher.recover()
                sweeper = asyncio.create_task(self._sweep(), name="lark-journal-sweeper")
                stack.push_async_callback(cancel_and_wait, sweeper)
            self._long_connection(stack)
            for extension in self._extensions:
                await stack.enter_async_context(extension(self))
        except BaseException:
            self._parts = None
            await stack.aclose()
            raise
        self._stack = stack
        self.ready = True
        log.info("app_ready", bot_open_id=self.bot_open_id, mode=self.settings.lark.mode)

    async def _build(self, stack: AsyncExitStack) -> Parts:
        s = self.settings
        core = await build_core(s, "lark")
        stack.push_async_callback(core.aclose)
        client = await self._lark_client(core)
        journal = open_journal(core.db, s.storage.redis_url, self.lease_seconds)
        owners, audit = Owners(core.db, s.owner.open_ids), AuditLog(core.db)
        directory = Directory(client)
        welcomer = Welcomer(core.db, client, owners, directory)
        for part in (journal, owners, audit, welcomer):
            await part.init()
        stack.push_async_callback(journal.close)
        stack.push_async_callback(audit.close)
        stack.push_async_callback(self._cancel_background)
        approvals: LarkApprovals | None = None
        consent: ConsentProvider = NobodyToAsk()
        if client is not None:  # the policy's Asks become Approve / Deny cards
            approvals = LarkApprovals(
                client, owners.check, lambda: self.settings.lark.approval_timeout_seconds
            )
            stack.callback(approvals.cancel_all)
            consent = approvals
        agent = core.agent(consent, "lark", audit=audit)
        inputs = TurnInputs(client, directory, lambda: self.settings, http=core.http)
        dispatcher = Dispatcher(
            agent=agent,
            journal=journal,
            owners=owners,
            commands=Commands(owners, agent.reset),
            view_factory=self._views(client),
            lark=lambda: self.settings.lark,
            inputs=inputs,
            has_history=core.store.exists,
        )
        scheduler = await stack.enter_async_context(
            leading_scheduler(core, agent, client, owners.check, s.server.drain_seconds)
        )
        desktop = DesktopServer(s.computer_use, lambda: core.runtime.services)
        await desktop.start()  # computer_use.start_xvfb: serve's own Xvfb
        stack.push_async_callback(desktop.stop)
        return Parts(
            core,
            client,
            journal,
            owners,
            audit,
            directory,
            welcomer,
            approvals,
            agent,
            dispatcher,
            scheduler,
        )

    async def _lark_client(self, core: Core) -> LarkClient | None:
        if not self.settings.lark.configured:
            log.warning(
                "lark_not_configured",
                hint="set lark.app_id and lark.app_secret (LARK_APP_ID / LARK_APP_SECRET): "
                "events are verified and acknowledged, but the bot cannot reply",
            )
            return None
        client = LarkClient.from_config(core.http, self.settings.lark)
        core.runtime.services["lark_client"] = client
        try:
            info = await client.bot_info()
            self.bot_open_id = str(info.get("open_id", ""))
        except Exception as err:  # mention detection needs it; DMs work without
            log.error(
                "lark_bot_info_failed",
                error=f"{type(err).__name__}: {err}",
                hint="check lark.app_id/app_secret and that the bot capability is enabled; "
                "group @-mentions are not recognised until this works (restart to retry)",
            )
        return client

    def _views(self, client: LarkClient | None) -> ViewFactory:
        """How turns are shown: the given factory, streaming cards, or plain replies."""
        if self._view_factory is not None:
            return self._view_factory
        if client is None:
            return _no_view
        return make_view_factory(client, self.settings.lark)

    def _long_connection(self, stack: AsyncExitStack) -> None:
        s = self.settings
        if s.lark.mode != "websocket" or self.client is None:
            return
        secret = s.lark.app_secret.get_secret_value()
        ws = LarkLongConnection(s.lark.app_id, secret, s.lark.domain, self.submit)
        ws.start()
        stack.push_async_callback(ws.aclose)

    async def submit(self, envelope: dict[str, Any]) -> Any:
        """Hand an authenticated event envelope to the pipeline (webhook and long connection)."""
        if not self.ready:  # e.g. SIGTERM arrived while the body was read: never 200 and drop
            raise NotAccepting("not ready")
        event_type = envelope.get("header", {}).get("event_type")
        if event_type == CARD_ACTION_TRIGGER:  # long connection: card actions come this way
            return await self.handle_card(envelope)
        if event_type == RECALLED:  # its queued or running turn stops, unanswered
            message_id = str((envelope.get("event") or {}).get("message_id") or "")
            return "recalled" if self.dispatcher.cancel(message_id, "recalled") else "ignored"
        if event_type in WELCOME_EVENTS and self.client is not None:
            greet = self.parts.welcomer.greet(event_type, envelope.get("event") or {})
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

    async def handle_card(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """A verified `card.action.trigger`: an approval click (nothing else uses buttons)."""
        approvals = self._parts.approvals if self._parts is not None else None
        if approvals is None:
            return {}
        return await approvals.handle_card(envelope)

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
        if self._parts is None:
            return True
        return await self.dispatcher.drain(timeout or self.settings.server.drain_seconds)

    async def stop(self) -> None:
        """Drain (if not yet), then close everything in reverse order of creation."""
        if self._stack is None:
            return
        await self.drain()
        stack, self._stack = self._stack, None
        self._parts = None
        await stack.aclose()

    async def _cancel_background(self) -> None:
        for task in list(self._background):
            await cancel_and_wait(task)


def _no_view(msg: InboundMessage, ctx: RequestContext) -> TurnView:
    raise LarkBotError("lark.app_id/app_secret are not configured: nothing can be shown")
