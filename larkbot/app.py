"""App: the one composition root of `larkbot serve` — builds every part in order, closes them all.

`start()` builds the parts one after another on an `AsyncExitStack`; when a later part fails,
the stack closes exactly what was started before it, in reverse order. `stop()` drains the
in-flight turns and closes the same stack. Every part is a typed field of `LarkParts`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from larkbot.agent import Agent
from larkbot.app_lark import notify_with, open_lark_client, status_with
from larkbot.config import Settings
from larkbot.consent import ConsentProvider, NobodyToAsk
from larkbot.desktop import DesktopServer
from larkbot.errors import LarkBotError
from larkbot.lark.api.budget import CallLedger
from larkbot.lark.api.budget_wiring import planner
from larkbot.lark.api.client import LarkClient
from larkbot.lark.approvals.approval import LarkApprovals
from larkbot.lark.approvals.approval_store import ApprovalStore
from larkbot.lark.approvals.audit import AuditLog
from larkbot.lark.arrival.inbound import MESSAGE_EVENT, normalize
from larkbot.lark.arrival.webhook import CARD_ACTION_TRIGGER
from larkbot.lark.arrival.ws import LarkLongConnection
from larkbot.lark.claims.journal import InboundJournal
from larkbot.lark.claims.journal_redis import open_journal
from larkbot.lark.delivery.direct import direct_notifier
from larkbot.lark.delivery.job_delivery import LarkNotifier
from larkbot.lark.delivery.streaming import make_view_factory
from larkbot.lark.events.native_events import NATIVE_EVENTS, NativeEvents, start_native
from larkbot.lark.events.welcome import RECALLED, WELCOME_EVENTS, Welcomer
from larkbot.lark.oauth.wiring import build_oauth
from larkbot.lark.owners import Owners
from larkbot.lark.turns.commands import UNSIGNED_REFUSAL, Commands
from larkbot.lark.turns.dispatcher import Dispatcher
from larkbot.lark.turns.people import Directory
from larkbot.lark.turns.turn_input import TurnInputs
from larkbot.logs import get_logger
from larkbot.memory.wiring import memory_nightly
from larkbot.runtime_factory import Core, build_core
from larkbot.scheduler.wiring import leading_scheduler
from larkbot.storage.signals import APPROVAL_CHANNEL, make_signal
from larkbot.tasks import cancel_and_wait

log = get_logger("larkbot.app")

PURGE_EVERY = 3600.0


class NotAccepting(LarkBotError):
    """Starting or draining: the event is not taken, Lark must redeliver it (503 / error ACK)."""


@dataclass(frozen=True)
class LarkParts:
    """Everything `serve` runs on top of the core, built once by `App.start`."""

    core: Core
    client: LarkClient | None  # None: lark.app_id/app_secret not configured (cannot reply)
    bot_open_id: str
    journal: InboundJournal
    owners: Owners
    audit: AuditLog
    welcomer: Welcomer
    approvals: LarkApprovals | None
    agent: Agent
    dispatcher: Dispatcher | None  # None without a client: events are acknowledged only
    long_connection: LarkLongConnection | None = None  # lark.mode websocket only
    ledger: CallLedger | None = None  # the month's Lark API calls (with Lark credentials)
    native: NativeEvents | None = None  # bot menu, 👍/👎 feedback, document comments


class App:
    """The serve process: `start()` builds the parts, `submit()` takes events, `stop()` closes."""

    def __init__(self, settings: Settings, *, lease_seconds: float | None = None) -> None:
        self.settings = settings
        self.lease_seconds = lease_seconds or settings.lark.claim_lease_seconds
        self.ready = False
        self._parts: LarkParts | None = None
        self._stack: AsyncExitStack | None = None
        self._background: set[asyncio.Task[Any]] = set()  # welcomes, sent after the ack

    @property
    def parts(self) -> LarkParts:
        """The running parts (after `start`)."""
        assert self._parts is not None, "App.start() first"
        return self._parts

    @property
    def started(self) -> bool:
        """True between a successful `start()` and `stop()`."""
        return self._parts is not None

    @property
    def client(self) -> LarkClient | None:
        """The Lark client; None before `start` or without Lark credentials."""
        return self._parts.client if self._parts is not None else None

    @property
    def ws(self) -> LarkLongConnection | None:
        """The long connection (`lark.mode: websocket`), for /healthz and /readyz."""
        return self._parts.long_connection if self._parts is not None else None

    @property
    def core(self) -> Core:
        """Database, http client, registry, provider and sessions (after `start`)."""
        return self.parts.core

    @property
    def dispatcher(self) -> Dispatcher:
        """The turn dispatcher (after `start`)."""
        assert self.parts.dispatcher is not None, "lark is not configured"
        return self.parts.dispatcher

    @property
    def journal(self) -> InboundJournal:
        """The inbound journal (after `start`)."""
        return self.parts.journal

    @property
    def owners(self) -> Owners:
        """The owner list and pairing (after `start`)."""
        return self.parts.owners

    @property
    def audit(self) -> AuditLog:
        """The audit table of tool decisions (after `start`)."""
        return self.parts.audit

    @property
    def welcomer(self) -> Welcomer:
        """The welcome-message sender (after `start`)."""
        return self.parts.welcomer

    async def start(self) -> None:
        """Build every part in order; on a failure, close what was started and re-raise."""
        stack = AsyncExitStack()
        try:
            self._parts = await self._build(stack)
        except BaseException:
            self._parts = None
            await stack.aclose()
            raise
        self._stack = stack
        self.ready = True
        log.info("app_ready", bot_open_id=self._parts.bot_open_id, mode=self.settings.lark.mode)

    async def _build(self, stack: AsyncExitStack) -> LarkParts:
        s = self.settings
        core = await build_core(s, "lark")
        stack.push_async_callback(core.aclose)
        owners = Owners(core.db, s.owner.open_ids, lark_connected=s.lark.configured)
        await owners.init()
        client, bot_open_id, ledger = await open_lark_client(core, owners, stack, self._budget)
        unsigned = s.lark.mode == "webhook" and not s.lark.encrypt_key.get_secret_value()
        if unsigned and client is not None:  # without an app, lark_not_configured says it all
            log.warning(
                "lark_events_unsigned",
                problem="lark.encrypt_key is not set: Lark sends events without a signature, "
                "so a captured or forged event cannot be told from a fresh one",
                effect="until it is set, nobody's message has owner powers here: no tools with "
                "side effects, no private data, no /claim, card buttons do nothing",
                hint="set lark.encrypt_key (Lark console → Events & Callbacks → Encryption "
                "strategy), or use lark.mode: websocket",
            )
        journal = open_journal(core.db, s.storage.redis_url, self.lease_seconds)
        await journal.init()
        stack.push_async_callback(journal.close)
        audit = AuditLog(core.db)
        await audit.init()
        stack.push_async_callback(audit.close)
        directory = Directory(client)
        welcomer = Welcomer(core.db, client, owners, directory)
        await welcomer.init()
        stack.push_async_callback(self._cancel_background)
        approvals: LarkApprovals | None = None
        consent: ConsentProvider = NobodyToAsk()
        if client is not None:  # the policy's Asks become Approve / Deny cards
            store = ApprovalStore(
                core.db, make_signal(core.db, s.storage.redis_url, APPROVAL_CHANNEL)
            )
            await store.init()
            stack.push_async_callback(store.close)
            timeout = lambda: self.settings.lark.approval_timeout_seconds  # noqa: E731
            urgent = lambda: self.settings.lark.urgent_after_minutes  # noqa: E731
            approvals = consent = LarkApprovals(client, store, owners.check, timeout, urgent)
        agent = core.agent(consent, "lark", audit=audit)
        dispatcher = None
        auth = await build_oauth(core, client, owners.check, stack)  # /auth, workspace service
        if client is not None:
            dispatcher = Dispatcher(
                agent=agent,
                journal=journal,
                owners=owners,
                commands=Commands(
                    owners,
                    agent.reset,
                    status_with(core, ledger, self._budget),
                    memory=core.memory,
                    auth=auth,
                ),
                view_factory=make_view_factory(
                    client, s.lark, planner(ledger, self._budget) if ledger else None
                ),
                lark=lambda: self.settings.lark,
                inputs=TurnInputs(client, directory, lambda: self.settings, core.http),
                sessions=core.store,
                limits=lambda: self.settings.limits,
                notify=notify_with(client),
            )
        ids, lark_cfg = (bot_open_id, s.lark.app_id), lambda: self.settings.lark
        native = await start_native(
            stack, client, core, journal, dispatcher, agent, owners, ids, lark_cfg
        )
        drain = s.server.drain_seconds
        notifier = LarkNotifier(client) if client is not None else None
        scheduler = leading_scheduler(core, agent, notifier, owners.check, drain)
        jobs = await stack.enter_async_context(scheduler)
        await stack.enter_async_context(memory_nightly(core, jobs, direct_notifier(client)))
        if approvals is not None:  # before the scheduler drains: a job waiting on a card ends
            stack.callback(approvals.cancel_all)
        desktop = DesktopServer(s.computer_use, core.runtime.services)
        await desktop.start()  # computer_use.start_xvfb: serve's own Xvfb
        stack.push_async_callback(desktop.stop)
        if dispatcher is not None:
            await dispatcher.recover()
            sweeper = asyncio.create_task(self._sweep(dispatcher, journal), name="lark-sweeper")
            stack.push_async_callback(cancel_and_wait, sweeper)
        ws = None
        if s.lark.mode == "websocket" and dispatcher is not None:
            secret = s.lark.app_secret.get_secret_value()
            ws = LarkLongConnection(s.lark.app_id, secret, s.lark.domain, self.submit)
            ws.start()
            stack.push_async_callback(ws.aclose)
        return LarkParts(
            core,
            client,
            bot_open_id,
            journal,
            owners,
            audit,
            welcomer,
            approvals,
            agent,
            dispatcher,
            ws,
            ledger,
            native,
        )

    def _budget(self) -> int:
        return self.settings.lark.monthly_call_budget

    async def submit(self, envelope: dict[str, Any], signed: bool = True) -> str | dict[str, Any]:
        """Hand an authenticated event envelope to the pipeline (webhook and long connection).

        `signed` False: a webhook event without a signature (no lark.encrypt_key), whose
        freshness nobody can check; its turn runs with no owner powers.
        """
        parts = self._parts
        if not self.ready or parts is None:  # e.g. SIGTERM arrived while the body was read
            raise NotAccepting("not ready")
        event_type = envelope.get("header", {}).get("event_type")
        if event_type == CARD_ACTION_TRIGGER:  # long connection: the answer is the ACK's data
            return await self.handle_card(envelope, signed)
        if event_type == RECALLED:  # its queued or running turn stops, unanswered
            message_id = str((envelope.get("event") or {}).get("message_id") or "")
            if parts.dispatcher is None:
                return "ignored"
            return await parts.dispatcher.recall(message_id)
        if event_type in WELCOME_EVENTS and parts.client is not None:
            greet = parts.welcomer.greet(event_type, envelope.get("event") or {})
            task = asyncio.create_task(greet, name="lark-welcome")
            self._background.add(task)
            task.add_done_callback(self._background_done)
            return "welcome"
        if event_type in NATIVE_EVENTS:  # menu, 👍/👎, document comments
            return await parts.native.submit(event_type, envelope, signed) if parts.native else "-"
        if event_type != MESSAGE_EVENT:
            return "ignored"  # other events: acknowledged, nothing to do
        try:
            msg = normalize(envelope, parts.bot_open_id)
        except Exception:  # sender-controlled shapes must never fail the request
            log.error("lark_normalize_failed", exc_info=True)
            return "ignored"
        if msg is None:
            return "ignored"
        if not signed:
            msg = dataclasses.replace(msg, signed=False)
        if parts.dispatcher is None:
            log.warning("lark_reply_impossible", reason="lark.app_id/app_secret not configured")
            return "unconfigured"
        outcome = await parts.dispatcher.accept(msg)
        if outcome == "draining":
            raise NotAccepting(outcome)
        return outcome

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("lark_background_failed", exc_info=task.exception())

    async def _cancel_background(self) -> None:
        for task in list(self._background):
            await cancel_and_wait(task)

    async def handle_card(self, envelope: dict[str, Any], signed: bool = True) -> dict[str, Any]:
        """A verified `card.action.trigger`: an Approve / Deny click on an approval card."""
        approvals = self._parts.approvals if self._parts is not None else None
        if approvals is None:
            return {}
        if not signed:  # an Approve click nobody can prove fresh must not approve anything
            return {"toast": {"type": "error", "content": UNSIGNED_REFUSAL}}
        return await approvals.handle_card(envelope)

    async def _sweep(self, dispatcher: Dispatcher, journal: InboundJournal) -> None:
        """Retake turns whose replica died (expired leases) and purge old journal entries."""
        last_purge = 0.0
        while True:
            await asyncio.sleep(self.lease_seconds / 2)
            try:
                await dispatcher.recover()
                if time.monotonic() - last_purge > PURGE_EVERY:
                    last_purge = time.monotonic()
                    await journal.purge()
            except Exception:
                log.warning("lark_sweep_failed", exc_info=True)

    async def idle(self, timeout: float) -> bool:
        """Wait (bounded) until no turn and no native event is being worked on; True when idle."""
        parts = self._parts
        if parts is None:
            return True
        deadline = asyncio.get_running_loop().time() + timeout
        # native events first: a menu click ends by queueing a turn, which the dispatcher runs
        if parts.native is not None and not await parts.native.idle(timeout):
            return False
        left = max(0.0, deadline - asyncio.get_running_loop().time())
        return parts.dispatcher is None or await parts.dispatcher.join(left)

    async def message_status(self, message_id: str) -> str | None:
        """Where an inbound message stands in the journal: claimed, done, failed or None."""
        return await self.journal.status(message_id)

    async def drain(self, timeout: float | None = None) -> bool:
        """Stop taking events (healthz 503) and let in-flight turns finish within `timeout`."""
        self.ready = False
        if self._parts is None or self._parts.dispatcher is None:
            return True
        return await self._parts.dispatcher.drain(timeout or self.settings.server.drain_seconds)

    async def stop(self) -> None:
        """Drain (if not yet), then close every part in reverse order of creation."""
        if self._stack is None:
            return
        await self.drain()
        stack, self._stack = self._stack, None
        try:
            await stack.aclose()
        finally:
            self._parts = None
