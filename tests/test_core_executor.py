"""ToolExecutor: context, timeouts, validation, output caps and compression; error marking."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from larkbot.providers.base import ToolCall
from tests.core_helpers import OWNER, EchoTool, HangingTool, RaisingTool
from tools.base import BaseTool, ToolResult
from tools.executor import ToolExecutor, for_model
from tools.output import MAX_OUTPUT_CHARS, compress, fit_output
from tools.registry import ToolRegistry


class BigTool(BaseTool):
    name = "big"
    description = "Prints a lot."

    def __init__(self, text: str, no_compress: bool = False) -> None:
        self.text = text
        self.no_compress = no_compress

    async def run(self, **kw: Any) -> str:
        return self.text


class TimeoutArgTool(BaseTool):
    name = "waits"
    description = "Has a timeout argument."
    parameters = {"type": "object", "properties": {"timeout": {"type": "integer"}}}  # noqa: RUF012
    timeout = 0.1

    async def run(self, **kw: Any) -> str:
        await asyncio.sleep(0.3)
        return "waited"


def executor(*tools: BaseTool, timeout: float = 5.0) -> ToolExecutor:
    registry = ToolRegistry()
    for t in tools:
        registry.register(t)
    return ToolExecutor(registry, timeout)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (ToolCall("1", "missing", {}), "unknown tool 'missing'"),
        (ToolCall("2", "echo", {}), "missing required argument 'text'"),
        (ToolCall("3", "echo", {"text": 5}), "invalid argument 'text'"),
        (ToolCall("4", "echo", {}, parse_error="arguments are not valid JSON"), "not valid JSON"),
        (ToolCall("5", "boom", {}), "boom failed: RuntimeError: kaboom"),
        (ToolCall("6", "hang", {}), "hang timed out after 0.2 s"),
    ],
)
async def test_failures_are_error_results(call: ToolCall, needle: str) -> None:
    result = await executor(EchoTool(), RaisingTool(), HangingTool()).execute(call, OWNER)
    assert result.is_error and needle in result.content


async def test_timeout_argument_widens_the_timeout() -> None:
    ex = executor(TimeoutArgTool())
    short = await ex.execute(ToolCall("1", "waits", {}), OWNER)
    long = await ex.execute(ToolCall("2", "waits", {"timeout": 1}), OWNER)
    assert short.is_error and not long.is_error


def test_timeout_argument_is_capped() -> None:
    """Regression: a model-chosen `timeout` (1e12, inf) made the executor wait without bound."""
    ex = executor(TimeoutArgTool())
    for asked in (1e12, float("inf")):
        assert ex.timeout_for(TimeoutArgTool(), {"timeout": asked}) == 3605.0


class WaitingTool(BaseTool):
    """Says when it started, then waits; records whether it was cancelled."""

    name = "wait"
    description = "Waits until cancelled."

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def run(self, **kw: Any) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "never"


async def test_cancellation_propagates() -> None:
    tool = WaitingTool()
    task = asyncio.create_task(executor(tool).execute(ToolCall("1", "wait", {}), OWNER))
    await asyncio.wait_for(tool.started.wait(), 30)  # the tool is running, not just scheduled
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tool.cancelled  # reached the tool, not swallowed on the way


async def test_long_output_is_cut_with_a_marker() -> None:
    text = "".join(f"line {i:05d} {'x' * 40}\n" for i in range(1000))
    result = await executor(BigTool(text, no_compress=True)).execute(
        ToolCall("1", "big", {}), OWNER
    )
    assert result.content.startswith(text[:MAX_OUTPUT_CHARS])
    assert f"[… {len(text) - MAX_OUTPUT_CHARS} chars cut …]" in result.content


async def test_compressible_output_keeps_head_and_tail() -> None:
    text = "START\n" + "word   \t  word\n\n\n\n" * 2000 + "THE END"
    result = await executor(BigTool(text)).execute(ToolCall("1", "big", {}), OWNER)
    assert result.content.startswith("START\nword word\n\nword word")
    assert result.content.endswith("THE END") and "chars cut" in result.content
    assert len(result.content) < MAX_OUTPUT_CHARS + 50


def test_no_compress_output_is_verbatim() -> None:
    text = "a    b\n\n\n\nc  " * 500
    assert fit_output(text, no_compress=True) == text
    assert fit_output("short   text\n\n\n", no_compress=False) == "short   text\n\n\n"
    assert compress("a  \t b   \n\n\n\nc") == "a b\n\nc"


async def test_a_call_without_context_is_refused_and_not_run() -> None:
    """Fail closed: no explicit request context, no run (and no owner rights by default)."""
    ran: list[str] = []

    class Recorder(BaseTool):
        name = "rec"
        description = "Records."

        async def run(self, **kw: Any) -> str:
            ran.append("yes")
            return "ran"

    result = await executor(Recorder()).execute(ToolCall("1", "rec", {}), None)
    assert result.is_error and "no request context" in result.content and ran == []
    assert not (await executor(Recorder()).execute(ToolCall("2", "rec", {}), OWNER)).is_error


async def test_context_tools_refuse_when_run_without_context() -> None:
    echo = EchoTool()
    refused = await echo.run(text="hi")
    assert isinstance(refused, ToolResult) and refused.is_error
    assert await echo.invoke(OWNER, {"text": "hi"}) == "hi (from local in s1)"


def test_every_error_reaches_the_model_marked_the_same_way() -> None:
    """Regression: a tool's own is_error result reached the model unmarked, like content."""
    own = ToolResult("source '/etc/passwd' is a path outside the knowledge directory", True)
    prefixed = ToolResult("Error: boom failed", True)
    assert for_model(own) == "Error: source '/etc/passwd' is a path outside the knowledge directory"
    assert for_model(prefixed) == "Error: boom failed"
    assert for_model(ToolResult("Error: in a file", False)) == "Error: in a file"
