"""Runs tool calls, each with its context and a timeout; every failure becomes an error result.

A call without a request context is refused (fail closed). Error results carry the bare
reason; `for_model` marks them `Error: …` in one place, whoever produced them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from larkbot import metrics
from larkbot.logs import get_logger
from larkbot.providers.base import ToolCall
from tools.base import BaseTool, ToolResult
from tools.output import MAX_OUTPUT_CHARS, fit_output
from tools.registry import ToolRegistry
from tools.validation import validate_arguments

if TYPE_CHECKING:
    from larkbot.context import RequestContext

log = get_logger(__name__)
ERROR_MARK = "Error: "

TIMEOUT_GRACE = 5.0  # seconds beyond a tool's own `timeout` argument before the executor steps in
MAX_ARGUMENT_TIMEOUT = 3600.0  # a `timeout` argument (chosen by the model) never waits longer


def error_result(reason: str) -> ToolResult:
    """An error result the model can read and act on."""
    return ToolResult(content=reason, is_error=True)


def for_model(result: ToolResult) -> str:
    """The text the model sees for a result: errors always marked the same way."""
    if not result.is_error:
        return result.content
    return ERROR_MARK + result.content.removeprefix(ERROR_MARK)


class ToolExecutor:
    """Looks tools up, validates arguments, runs them with a timeout and fits their output."""

    def __init__(
        self,
        registry: ToolRegistry,
        default_timeout: float = 120.0,
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        self.registry = registry
        self.default_timeout = default_timeout
        self.max_output_chars = max_output_chars

    def timeout_for(self, tool: BaseTool, arguments: dict[str, Any]) -> float:
        """The tool's own timeout (or the default), widened to a `timeout` argument it declares."""
        base = tool.timeout or self.default_timeout
        asked = arguments.get("timeout")
        declared = "timeout" in tool.parameters.get("properties", {})
        if declared and isinstance(asked, int | float) and not isinstance(asked, bool):
            return max(base, min(float(asked), MAX_ARGUMENT_TIMEOUT) + TIMEOUT_GRACE)
        return base

    async def execute(
        self, call: ToolCall, ctx: RequestContext | None, tool: BaseTool | None = None
    ) -> ToolResult:
        """Run one call for `ctx` (lookup unless `tool` is given, validation); never raises."""
        if ctx is None:
            return error_result(f"{call.name}: refused, the call has no request context")
        tool = tool or self.registry.get(call.name)
        if tool is None:
            known = ", ".join(t.name for t in self.registry.all()) or "none"
            return error_result(f"unknown tool '{call.name}'. Available tools: {known}")
        if call.parse_error:
            return error_result(f"{call.name}: {call.parse_error}")
        problem = validate_arguments(tool, call.arguments)
        if problem:
            return error_result(f"{call.name}: {problem}")
        return await self._run(tool, call, ctx)

    async def _run(self, tool: BaseTool, call: ToolCall, ctx: RequestContext) -> ToolResult:
        timeout = self.timeout_for(tool, call.arguments)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                raw = await tool.invoke(ctx, call.arguments)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            log.warning("tool_timeout", tool=tool.name, timeout=timeout)
            metrics.count_tool_call(tool.name, "timeout")
            return error_result(f"{tool.name} timed out after {timeout:g} s")
        except Exception as err:
            log.error("tool_failed", tool=tool.name, exc_info=True)
            metrics.count_tool_call(tool.name, "error")
            return error_result(f"{tool.name} failed: {type(err).__name__}: {err}")
        log.debug("tool_done", tool=tool.name, seconds=round(time.perf_counter() - started, 3))
        result = self._fit(tool, raw)
        metrics.count_tool_call(tool.name, "error" if result.is_error else "ok")
        return result

    def _fit(self, tool: BaseTool, raw: object) -> ToolResult:
        if isinstance(raw, ToolResult):
            content = fit_output(raw.content, tool.no_compress, self.max_output_chars)
            return replace(raw, content=content)  # sources, ui and attachments kept
        text = raw if isinstance(raw, str) else str(raw)
        return ToolResult(content=fit_output(text, tool.no_compress, self.max_output_chars))
