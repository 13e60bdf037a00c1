"""The checks a tool call passes before it runs: lookup, access, arguments, consent."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from larkbot.access import ToolAccess
from larkbot.consent import ConsentProvider, ConsentRequest, ConsentScreen, ConsentStore
from larkbot.context import RequestContext
from larkbot.events import ConsentRequested
from larkbot.logs import get_logger
from larkbot.providers.base import ToolCall
from tools.base import BaseTool, ToolResult
from tools.executor import error_result
from tools.validation import validate_arguments

log = get_logger(__name__)


@dataclass(frozen=True)
class Verdict:
    """The outcome of the checks: the tool to run, or an error result for the model."""

    tool: BaseTool | None
    error: ToolResult | None = None


def _refused(reason: str) -> Verdict:
    return Verdict(None, error_result(reason))


class CallGate:
    """Runs lookup → access.refusal → validation → consent for one call of one turn."""

    def __init__(
        self,
        lookup: Callable[[str], BaseTool | None],
        available: Callable[[RequestContext], list[BaseTool]],
        access: ToolAccess,
        consent: ConsentProvider,
        grants: ConsentStore,
    ) -> None:
        self.lookup = lookup
        self.available = available
        self.access = access
        self.consent = consent
        self.grants = grants
        # resolved once: a runtime Protocol check per call would cost more than the call's checks
        self._screen = consent.screen if isinstance(consent, ConsentScreen) else None

    def _static_checks(self, call: ToolCall, ctx: RequestContext) -> Verdict:
        tool = self.lookup(call.name)
        if tool is None:
            names = ", ".join(t.name for t in self.available(ctx)) or "none"
            return _refused(f"unknown tool '{call.name}'. Tools you can use here: {names}")
        reason = self.access.refusal(tool, ctx)
        audit = getattr(self.access, "audit_call", None)  # optional hook (Lark's audit log)
        if audit is not None:
            audit(tool, ctx, call.arguments, reason)
        if reason:
            return _refused(reason)
        if call.parse_error:
            return _refused(f"{call.name}: {call.parse_error}")
        problem = validate_arguments(tool, call.arguments)
        if problem:
            return _refused(f"{call.name}: {problem}")
        if self._screen is not None:
            reason = self._screen(tool, ctx)
            if reason:
                return _refused(reason)
        return Verdict(tool)

    async def check(
        self, call: ToolCall, ctx: RequestContext
    ) -> AsyncIterator[ConsentRequested | Verdict]:
        """Yield a ConsentRequested when the provider is asked, then the Verdict."""
        try:
            verdict = self._static_checks(call, ctx)
        except Exception as err:  # a broken policy refuses the call; it must not end the turn
            log.error("tool_checks_failed", tool=call.name, exc_info=True)
            yield _refused(f"{call.name}: could not be checked ({type(err).__name__}); not run")
            return
        tool = verdict.tool
        if tool is None:
            yield verdict
            return
        try:
            description = tool.consent_check(**call.arguments)
            if description is None:
                yield verdict
                return
            always = bool(tool.consent_always(**call.arguments))
            scope = tool.consent_scope(**call.arguments)
        except Exception as err:
            log.error("consent_hook_failed", tool=tool.name, exc_info=True)
            yield _refused(f"{tool.name}: could not check consent ({type(err).__name__}: {err})")
            return
        if not always and self.grants.is_granted(ctx.session_id, scope, ctx.sender_id):
            yield verdict
            return
        yield ConsentRequested(call.id, tool.name, description, scope, always)
        request = ConsentRequest(tool, call.arguments, description, scope, always, ctx, call.id)
        try:
            decision = await self.consent.decide(request)
        except Exception as err:
            log.error("consent_provider_failed", tool=tool.name, exc_info=True)
            yield _refused(f"{tool.name}: consent could not be asked ({err}); it did not run")
            return
        if not decision.allowed:
            why = decision.reason or "declined"
            yield _refused(f"{tool.name} was not allowed: {why}. It did not run; do not retry it.")
            return
        if not always and decision.remember:
            self.grants.grant(ctx.session_id, scope, ctx.sender_id)
        yield verdict
