"""One call through the policy: lookup → access → arguments → decide → (present the Ask).

Every call on every path (the agent loop for Lark, terminal, web and scheduled jobs) passes
here; each outcome is written to the audit sink once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from larkbot.consent import ConsentProvider, ConsentRequest
from larkbot.context import RequestContext
from larkbot.events import ConsentRequested
from larkbot.logs import get_logger
from larkbot.policy.decision import Allow, Ask, Refuse
from larkbot.policy.rules import Policy
from larkbot.providers.base import ToolCall
from tools.base import BaseTool
from tools.validation import validate_arguments

log = get_logger(__name__)


class AuditSink(Protocol):
    """Where decisions are recorded (Lark's audit table); `record` must not block."""

    def record(
        self, sender: str, chat: str, tool: str, arguments: Any, allowed: bool, reason: str
    ) -> None:
        """Record one decision."""
        ...


@dataclass(frozen=True)
class Verdict:
    """The outcome: the tool to run, or the reason it does not run (an error for the model)."""

    tool: BaseTool | None
    refusal: str = ""


class ToolGate:
    """Checks one call of one turn against the policy and asks the owner when it says Ask."""

    def __init__(
        self,
        policy: Policy,
        lookup: Callable[[str], BaseTool | None],
        available: Callable[[RequestContext], list[BaseTool]],
        consent: ConsentProvider,
        audit: AuditSink | None = None,
    ) -> None:
        self.policy = policy
        self.lookup = lookup
        self.available = available
        self.consent = consent
        self.audit = audit

    def _record(self, call: ToolCall, ctx: RequestContext, allowed: bool, reason: str) -> None:
        if self.audit is not None:
            self.audit.record(
                ctx.sender_id, ctx.chat_id, call.name, call.arguments, allowed, reason
            )

    def _static(self, call: ToolCall, ctx: RequestContext) -> tuple[BaseTool | None, str]:
        tool = self.lookup(call.name)
        if tool is None:
            names = ", ".join(t.name for t in self.available(ctx)) or "none"
            return None, f"unknown tool '{call.name}'. Tools you can use here: {names}"
        verdict = self.policy.access(tool, ctx)
        if isinstance(verdict, Refuse):
            return None, verdict.reason
        if call.parse_error:
            return None, f"{call.name}: {call.parse_error}"
        problem = validate_arguments(tool, call.arguments)
        return (None, f"{call.name}: {problem}") if problem else (tool, "")

    async def check(
        self, call: ToolCall, ctx: RequestContext | None
    ) -> AsyncIterator[ConsentRequested | Verdict]:
        """Yield a ConsentRequested when the owner is asked, then the Verdict."""
        if ctx is None:  # fail closed: nobody known asked for this call
            yield Verdict(None, "refused: this call has no request context")
            return
        try:
            tool, problem = self._static(call, ctx)
            # decide() runs the tool's consent hooks, which may be CPU work (the shell
            # classifier parses the command): a worker thread keeps the loop answering.
            decision = (
                await asyncio.to_thread(self.policy.decide, tool, call.arguments, ctx)
                if tool
                else None
            )
        except Exception as err:  # a broken check refuses the call; it must not end the turn
            log.error("tool_checks_failed", tool=call.name, exc_info=True)
            tool, problem = (
                None,
                f"{call.name}: could not be checked ({type(err).__name__}); not run",
            )
            decision = None
        if tool is None or decision is None:
            self._record(call, ctx, False, problem)
            yield Verdict(None, problem)
            return
        if isinstance(decision, Refuse):
            self._record(call, ctx, False, decision.reason)
            yield Verdict(None, decision.reason)
            return
        if isinstance(decision, Allow):
            self._record(call, ctx, True, decision.reason)
            yield Verdict(tool)
            return
        async for item in self._ask(tool, call, ctx, decision):
            yield item

    async def _ask(
        self, tool: BaseTool, call: ToolCall, ctx: RequestContext, ask: Ask
    ) -> AsyncIterator[ConsentRequested | Verdict]:
        try:  # e.g. a base row whose value fits no field: say so now, not after a click
            problem = await tool.check_before_asking(ctx, call.arguments)
        except Exception as err:
            log.error("tool_precheck_failed", tool=tool.name, exc_info=True)
            problem = f"{tool.name}: could not be checked ({type(err).__name__}); not run"
        if problem:
            self._record(call, ctx, False, problem)
            yield Verdict(None, problem)
            return
        yield ConsentRequested(call.id, tool.name, ask.prompt, ask.scope, ask.always, ask.sources)
        request = ConsentRequest(
            tool,
            call.arguments,
            ask.prompt,
            ask.scope,
            ask.always,
            ctx,
            call.id,
            ask.sources,
            ask.confirm_by,
        )
        try:
            answer = await self.consent.present(request)
        except Exception as err:
            log.error("consent_provider_failed", tool=tool.name, exc_info=True)
            reason = f"{tool.name}: consent could not be asked ({err}); it did not run"
            self._record(call, ctx, False, reason)
            yield Verdict(None, reason)
            return
        if not answer.allowed:
            why = answer.reason or "declined"
            if ask.sources:  # the owner (and the model) should know why it was asked at all
                why += f" (an approval was needed: {'; '.join(ask.sources)})"
            self._record(call, ctx, False, f"asked: {why}")
            yield Verdict(
                None, f"{tool.name} was not allowed: {why}. It did not run; do not retry it."
            )
            return
        if answer.for_session:
            self.policy.remember(ctx, ask)
        self._record(call, ctx, True, f"asked: {answer.reason or 'approved'}")
        yield Verdict(tool)
