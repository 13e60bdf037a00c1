"""The agent loop: model → tool calls (checked, run concurrently) → model … → final answer."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from larkbot import metrics
from larkbot.config import LiveSettings, Settings
from larkbot.consent import ConsentProvider
from larkbot.content_parts import MAX_HISTORY_IMAGES, Content, materialize, text_of
from larkbot.context import RequestContext
from larkbot.errors import ProviderError
from larkbot.events import (
    AgentEvent,
    ErrorEvent,
    FinalAnswer,
    TextDelta,
    ThinkingDelta,
    TokenCount,
    UiPayload,
)
from larkbot.find_tools import FindToolsTool, linked_tools
from larkbot.history_budget import HistoryBudget, history_budget, with_summary
from larkbot.llm_check import user_facing
from larkbot.logs import get_logger
from larkbot.policy import AuditSink, Policy, ToolGate
from larkbot.policy.provenance import for_model as wire_messages
from larkbot.policy.provenance import mark_results, untrusted_labels, user_message
from larkbot.policy.redact import hide_private_results
from larkbot.policy.secrets import SecretScrubber
from larkbot.prompt import build_system_prompt, detect_language
from larkbot.providers.base import (
    ChatProvider,
    Completion,
    Message,
    ReasoningChunk,
    TextChunk,
)
from larkbot.providers.capabilities import sees_images, shows_thinking
from larkbot.providers.wire import Wire
from larkbot.recall import Recalled, RecallHook
from larkbot.storage.sessions import SessionStore
from larkbot.tool_calls import round_sources, run_calls, scrubbed_calls
from larkbot.tool_images import with_round_images
from larkbot.tool_round import tool_round, unique_ids, with_reasoning
from larkbot.usage import Usage, UsageStore
from tools.base import BaseTool, ToolResult
from tools.executor import ToolExecutor
from tools.registry import ToolRegistry

log = get_logger(__name__)


class Agent:
    """One agent per interface; `stream_chat` never raises for tool or model failures."""

    def __init__(
        self,
        provider: ChatProvider,
        registry: ToolRegistry,
        store: SessionStore,
        consent: ConsentProvider,
        policy: Policy,
        settings: Settings | LiveSettings,
        interface: str = "cli",
        *,
        executor: ToolExecutor | None = None,
        audit: AuditSink | None = None,
        scrubber: SecretScrubber | None = None,
        usage: UsageStore | None = None,
        recall: RecallHook | None = None,
    ) -> None:
        self.provider = provider
        self.recall = recall  # long-term memory (`larkbot/memory`), passed by the composition root
        self.usage = usage
        self.budget = HistoryBudget(provider, store)
        self.registry = registry
        self.store = store
        self.consent = consent
        self.policy = policy
        self.scrubber = scrubber
        self._live = settings if isinstance(settings, LiveSettings) else None
        self._static = settings if isinstance(settings, Settings) else None
        self.interface = interface
        self._own_executor = executor is None
        self.executor = executor or ToolExecutor(registry, self.settings.tools.timeout_seconds)
        self.activated: dict[str, set[str]] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self.find_tools = FindToolsTool(self.available_tools, self._activate)
        self.gate = ToolGate(policy, self._lookup, self.available_tools, consent, audit)

    @property
    def settings(self) -> Settings:
        """The current settings (hot-reloaded `tools:` when built on LiveSettings)."""
        if self._live is not None:
            return self._live.get()
        assert self._static is not None
        return self._static

    # -- tools -------------------------------------------------------------------------------

    def _lookup(self, name: str) -> BaseTool | None:
        if name == self.find_tools.name:
            return self.find_tools
        tool = self.registry.get(name)
        if tool is None or self.interface not in tool.interfaces:
            return None
        if name in self.settings.tools.disabled:  # hot-reloaded: no restart needed
            return None
        return tool

    def _may_see(self, name: str, ctx: RequestContext) -> bool:
        """Whether this sender may see results of tool `name` (unknown tools: no)."""
        tool = self.registry.get(name) if name != self.find_tools.name else self.find_tools
        return tool is not None and self.policy.may_see_results(tool, ctx)

    def _as_asker(self, name: str) -> bool:
        """Whether `name` reads with the asker's own access (its results are theirs)."""
        tool = self.registry.get(name)
        return tool is not None and tool.acts_as_asker

    def available_tools(self, ctx: RequestContext) -> list[BaseTool]:
        """Every enabled tool of this interface the sender may see."""
        disabled = set(self.settings.tools.disabled)
        tools = [t for t in self.registry.for_interface(self.interface) if t.name not in disabled]
        return self.policy.visible(tools, ctx)

    def _activate(self, session_id: str, names: list[str]) -> None:
        self.activated.setdefault(session_id, set()).update(names)

    def advertised_tools(
        self, ctx: RequestContext, also: frozenset[str] = frozenset()
    ) -> list[BaseTool]:
        """Tools shown to the model: all, or (fast path) fast-path + activated + `also` (this
        turn's: a pasted Lark document link brings lark_doc_read) + find_tools."""
        visible = self.available_tools(ctx)
        if not self.settings.agent.fast_path:
            return visible
        active = self.activated.get(ctx.session_id, set()) | also
        return [t for t in visible if t.fast_path or t.name in active] + [self.find_tools]

    async def reset(self, session_id: str) -> None:
        """Forget a session: its history, consent grants and activated tools."""
        await self.store.clear(session_id)
        self.policy.grants.clear_session_grants(session_id)
        self.activated.pop(session_id, None)

    # -- the loop ----------------------------------------------------------------------------

    async def run(self, session_id: str, user_input: Content, ctx: RequestContext) -> FinalAnswer:
        """Run a turn to the end; on failure the answer is the error message."""
        final: FinalAnswer | None = None
        async for event in self.stream_chat(session_id, user_input, ctx):
            if isinstance(event, FinalAnswer):
                final = event
            elif isinstance(event, ErrorEvent):
                final = FinalAnswer(event.message)
        return final or FinalAnswer("")

    async def stream_chat(
        self, session_id: str, user_input: Content, ctx: RequestContext
    ) -> AsyncIterator[AgentEvent]:
        """Run one turn, yielding text deltas, tool events, consent requests and the answer.

        `user_input` is text, or OpenAI content parts (text and images, `content_parts.py`).
        """
        if ctx.session_id != session_id:
            ctx = ctx.with_session(session_id)
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        started, outcome = time.monotonic(), "cancelled"
        try:
            async with lock:  # turns of one session run one after another
                async for event in self._turn(session_id, user_input, ctx):
                    yield event
            outcome = "ok"
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except ProviderError as err:
            outcome = "error"
            log.warning("llm_failed", session=session_id, error=str(err))
            yield ErrorEvent(user_facing(err, ctx.is_owner))  # operator advice: owners only
        except Exception as err:
            outcome = "error"
            log.error("turn_failed", session=session_id, exc_info=True)
            yield ErrorEvent(f"Something went wrong in larkbot ({type(err).__name__}: {err}).")
        finally:
            metrics.observe_turn(ctx.interface, outcome, time.monotonic() - started)

    async def _turn(
        self, session_id: str, user_input: Content, ctx: RequestContext
    ) -> AsyncIterator[AgentEvent]:
        settings = self.settings
        if self._own_executor:  # follow a hot-reloaded tools.timeout_seconds
            self.executor.default_timeout = settings.tools.timeout_seconds
        budget = history_budget(
            settings.agent.history_max_tokens, Wire.for_config(settings.llm).context_tokens
        )
        # ~3.3 characters per token (the estimate's ratio): read enough rows to fill the budget
        load_chars = max(settings.agent.history_max_chars, budget * 4)
        history = await self.store.load(session_id, load_chars)
        # Text no owner wrote anywhere in the window (summarised turns included: the summary
        # carries them), or in this message (a quote, a forward, a document): while it is in
        # the context, every side effect needs the owner's approval naming it (/new clears).
        user_msg = user_message(user_input, ctx)
        ctx = ctx.with_untrusted(*untrusted_labels([*history, user_msg]))
        note, history = await self.budget.fit(session_id, history, budget, self._redactor(ctx))
        if not ctx.is_owner or ctx.chat_type == "group":
            # one member's memory results never reach another's turn (`personal`)
            history = hide_private_results(
                history,
                lambda name: self._may_see(name, ctx),
                self._as_asker,
                ctx.sender_id,
                self._personal,
            )
        user_text = text_of(user_input)
        linked = linked_tools(user_text)
        recalled = await self.recall(ctx, user_text) if self.recall else Recalled()
        # memories others wrote (or saved while reading untrusted text) raise the bar too
        ctx = ctx.with_untrusted(*recalled.untrusted)
        prompt = build_system_prompt(settings, ctx, user_text, fast=settings.agent.fast_path)
        prompt = f"{prompt}\n\n{recalled.text}" if recalled.text else prompt
        system = with_summary({"role": "system", "content": prompt}, note)
        context = await _with_images([*history, user_msg], settings)
        turn: list[Message] = []
        thinking_shown = shows_thinking(settings.llm, ctx)
        used, answered_by = Usage(), settings.llm.model
        # The turn is written in one transaction when it ends, fails or is cancelled (so the
        # user's message is kept even when the model fails): one write per turn, not per round.
        unsaved: list[Message] = [user_msg]
        texts: list[str] = []
        ui: list[dict[str, Any]] = []
        try:
            for _ in range(settings.agent.max_steps):
                tools = self.registry.openai_tools(self.advertised_tools(ctx, linked))
                completion: Completion | None = None
                async for item in self._ask_model(wire_messages([system, *context, *turn]), tools):
                    if isinstance(item, Completion):
                        completion = item
                    elif not isinstance(item, ThinkingDelta) or thinking_shown:
                        yield item
                assert completion is not None
                used.add(Usage.from_wire(completion.usage))
                answered_by = completion.model or answered_by
                if completion.text:
                    texts.append(completion.text)
                calls = unique_ids(completion.tool_calls)
                if not calls:
                    unsaved.append(
                        with_reasoning(
                            {"role": "assistant", "content": completion.text}, completion
                        )
                    )
                    await self._save(session_id, unsaved)
                    yield FinalAnswer(completion.text, ui, _tokens(answered_by, used))
                    return
                results: dict[str, ToolResult] = {}
                async for event in run_calls(
                    calls,
                    ctx,
                    results,
                    gate=self.gate,
                    executor=self.executor,
                    scrubber=self.scrubber,
                    cap=settings.agent.max_tool_calls_per_reply,
                ):
                    if isinstance(event, UiPayload):
                        ui.append(event.ui)
                    yield event
                # what no owner wrote (a fetched page, a downloaded file) raises the bar from
                # here on, and is stored with its result for the turns that follow
                marks = round_sources(calls, results, self._lookup)
                ctx = ctx.with_untrusted(*(s.label for found in marks.values() for s in found))
                round_msgs = tool_round(completion, scrubbed_calls(self.scrubber, calls), results)
                mark_results(round_msgs, marks)
                unsaved += round_msgs
                turn += round_msgs
                if any(r.attachments for r in results.values()):  # images: this turn only
                    named = [(c.name, results[c.id]) for c in calls]
                    turn = await asyncio.to_thread(with_round_images, turn, named, settings)
            note = _max_steps_note(settings.agent.max_steps, user_text)
            unsaved.append({"role": "assistant", "content": note})
            await self._save(session_id, unsaved)
            yield TextDelta(note)
            yield FinalAnswer("\n\n".join([*texts, note]), ui, _tokens(answered_by, used))
        finally:
            if unsaved:  # a failed or cancelled turn keeps its message and finished tool rounds
                await self._save(session_id, unsaved)
            await self._record_usage(session_id, answered_by, used)

    def _redactor(self, ctx: RequestContext) -> Callable[[list[Message]], list[Message]]:
        """What the summariser may read: in a group (or for others) no private tool results."""
        if ctx.is_owner and ctx.chat_type != "group":
            return lambda messages: messages
        public = replace(ctx, is_owner=False, sender_id="")

        def public_view(messages: list[Message]) -> list[Message]:
            return hide_private_results(
                messages,
                lambda name: self._may_see(name, public),
                self._as_asker,
                personal=self._personal,
            )

        return public_view

    def _personal(self, name: str) -> bool:
        """Whether results of tool `name` belong to the person who called it (memory)."""
        tool = self.registry.get(name)
        return tool is not None and tool.private_to_caller

    async def _record_usage(self, session_id: str, model: str, used: Usage) -> None:
        """Store the turn's tokens; accounting never fails a turn."""
        if self.usage is None:
            return
        try:
            await self.usage.record(session_id, model, used)
        except Exception:
            log.warning("usage_record_failed", session=session_id, exc_info=True)

    async def _save(self, session_id: str, unsaved: list[Message]) -> None:
        """Append and forget the unsaved messages."""
        messages = list(unsaved)
        unsaved.clear()
        await self.store.append(session_id, messages)

    async def _ask_model(
        self, messages: list[Message], tools: list[dict[str, Any]]
    ) -> AsyncIterator[TextDelta | ThinkingDelta | Completion]:
        model = self.settings.llm.model
        try:
            async for item in self._model_events(messages, tools):
                if isinstance(item, Completion):  # a fallback's answer counts under its model
                    metrics.count_llm_request(item.model or model, True, item.usage)
                yield item
        except ProviderError as err:
            metrics.count_llm_request(model, False, error=str(err))
            raise

    async def _model_events(
        self, messages: list[Message], tools: list[dict[str, Any]]
    ) -> AsyncIterator[TextDelta | ThinkingDelta | Completion]:
        if not self.settings.llm.stream:
            done = await self.provider.complete(messages, tools or None)
            if done.reasoning:
                yield ThinkingDelta(done.reasoning)
            if done.text:
                yield TextDelta(done.text)
            yield done
            return
        async for event in self.provider.stream(messages, tools or None):
            if isinstance(event, TextChunk):
                yield TextDelta(event.text)
            elif isinstance(event, ReasoningChunk):
                yield ThinkingDelta(event.text)
            elif isinstance(event, Completion):
                yield event


async def _with_images(messages: list[Message], settings: Settings) -> list[Message]:
    """Stored image references inlined for a model that sees images (newest few), else notes."""
    if not any(isinstance(m.get("content"), list) for m in messages):
        return messages
    keep = MAX_HISTORY_IMAGES if sees_images(settings) else 0
    return await asyncio.to_thread(materialize, messages, keep)


def _max_steps_note(steps: int, user_input: str) -> str:
    if detect_language(user_input) == "Chinese":
        return f"（已达到 {steps} 步上限（agent.max_steps），任务可能未完成。回复“继续”接着做。）"
    return (
        f"(Stopped after {steps} steps, the limit set by agent.max_steps; the task may be "
        "unfinished. Say 'continue' to go on.)"
    )


def _tokens(model: str, used: Usage) -> TokenCount:
    """The turn's token counts as the FinalAnswer carries them."""
    return TokenCount(model, used.prompt, used.completion, used.reasoning, used.cached)
