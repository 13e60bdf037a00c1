"""One round of tool calls: each checked by the policy in order, the approved ones run together.

Results and the arguments shown in events are scrubbed of the bot's own secrets here, before
the model, a card or storage sees them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import Any

from larkbot.context import RequestContext
from larkbot.events import AgentEvent, AttachmentReady, ToolFinished, ToolStarted, UiPayload
from larkbot.policy import ToolGate, Verdict
from larkbot.policy.secrets import SecretScrubber
from larkbot.providers.base import ToolCall
from larkbot.sources import Kind, Source
from tools.base import BaseTool, ToolResult
from tools.executor import ToolExecutor, error_result


def scrubbed_arguments(
    scrubber: SecretScrubber | None, arguments: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments without the bot's own secrets."""
    if scrubber is None:
        return arguments
    scrubbed: dict[str, Any] = scrubber.arguments(arguments)
    return scrubbed


def scrubbed_calls(scrubber: SecretScrubber | None, calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls as they are stored and sent back to the model: secrets replaced."""
    return [
        ToolCall(c.id, c.name, scrubbed_arguments(scrubber, c.arguments), c.parse_error)
        for c in calls
    ]


def untrusted_source(call: ToolCall) -> str:
    """How a card names an untrusted result: the tool and what it was asked for."""
    subject = next((v for v in call.arguments.values() if isinstance(v, str) and v), "")
    return f"{call.name} {subject[:80]}".strip() + " (output not written by the owner)"


def round_sources(
    calls: Sequence[ToolCall],
    results: dict[str, ToolResult],
    lookup: Callable[[str], BaseTool | None],
) -> dict[str, tuple[Source, ...]]:
    """What no owner wrote in this round's results, by call id: the result's own `sources`,
    else one naming the call when its tool's output is untrusted (and it did not fail)."""
    found: dict[str, tuple[Source, ...]] = {}
    for call in calls:
        result, tool = results.get(call.id), lookup(call.name)
        if result is None:
            continue
        if result.sources:
            found[call.id] = result.sources
        elif tool is not None and tool.untrusted_output and not result.is_error:
            try:
                kind = Kind(tool.untrusted_kind)
            except ValueError:  # a plugin's unknown kind is still untrusted
                kind = Kind.TOOL
            found[call.id] = (Source(kind, untrusted_source(call)),)
    return found


def _scrubbed(scrubber: SecretScrubber | None, result: ToolResult, tool: BaseTool) -> ToolResult:
    if scrubber is None:
        return result
    stored = not getattr(tool, "returns_stored_secret", False)  # get_secret: asked every time
    return replace(result, content=scrubber.text(result.content, stored))


def _over_cap(cap: int, asked: int) -> str:
    return (
        f"refused: this reply asked for {asked} tool calls and at most {cap} run per reply "
        "(agent.max_tool_calls_per_reply); this one did not run. Make the calls still needed "
        "in your next reply."
    )


async def _checked(
    gate: ToolGate,
    calls: Sequence[ToolCall],
    ctx: RequestContext,
    cap: int,
    results: dict[str, ToolResult],
    approved: list[tuple[ToolCall, BaseTool]],
    scrubber: SecretScrubber | None,
) -> AsyncIterator[AgentEvent]:
    """Ask the policy about each call in order (consent questions come one at a time)."""
    for index, call in enumerate(calls):
        verdict: Verdict | None = None
        if index >= cap:  # one reply must not start 150 shells at once
            verdict = Verdict(None, _over_cap(cap, len(calls)))
        else:
            async for item in gate.check(call, ctx):
                if isinstance(item, Verdict):
                    verdict = item
                else:
                    yield item
        assert verdict is not None
        if verdict.tool is None:
            error = error_result(verdict.refusal or "refused")
            results[call.id] = error
            shown = scrubbed_arguments(scrubber, call.arguments)
            yield ToolFinished(call.id, call.name, error.content, True, 0.0, shown)
        else:
            approved.append((call, verdict.tool))


async def run_calls(
    calls: Sequence[ToolCall],
    ctx: RequestContext,
    results: dict[str, ToolResult],
    *,
    gate: ToolGate,
    executor: ToolExecutor,
    scrubber: SecretScrubber | None,
    cap: int,
) -> AsyncIterator[AgentEvent]:
    """Check the calls, run the approved ones concurrently; every result lands in `results`."""
    approved: list[tuple[ToolCall, BaseTool]] = []
    async for event in _checked(gate, calls, ctx, cap, results, approved, scrubber):
        yield event
    if not approved:
        return
    started = time.perf_counter()
    tasks: dict[asyncio.Future[ToolResult], tuple[ToolCall, BaseTool]] = {}
    for call, tool in approved:
        yield ToolStarted(call.id, call.name, scrubbed_arguments(scrubber, call.arguments))
        tasks[asyncio.create_task(executor.execute(call, ctx, tool))] = (call, tool)
    try:
        pending: set[asyncio.Future[ToolResult]] = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                call, tool = tasks[task]
                result = _scrubbed(scrubber, task.result(), tool)
                results[call.id] = result
                elapsed = time.perf_counter() - started
                yield ToolFinished(call.id, call.name, result.content, result.is_error, elapsed)
                if result.ui:
                    yield UiPayload(result.ui)
                for attachment in result.attachments:
                    yield AttachmentReady(call.id, call.name, attachment)
    finally:
        for task in tasks:
            task.cancel()
