"""`llm.fallbacks`: other endpoints tried in order when the primary keeps failing.

Each endpoint is a full OpenAICompatProvider with its own profile and retries; the chain moves
to the next one only on a retryable failure (429, 5xx, timeout, connection) that survived those
retries. Every switch is logged and kept in `ModelStatus` for `/status`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from larkbot.config import LLMConfig
from larkbot.errors import ProviderError
from larkbot.logs import get_logger
from larkbot.providers.base import Completion, Message, StreamEvent, TextChunk
from larkbot.providers.openai_compat import OpenAICompatProvider

log = get_logger(__name__)
RESTART_NOTE = "\n\n[The model's answer broke off; a fallback model answers from the start:]\n\n"


@dataclass
class Switch:
    """One move from a failing endpoint to the next."""

    at: float
    from_model: str
    to_model: str
    reason: str


@dataclass
class ModelStatus:
    """Which endpoint answered last and the recent switches (newest last, at most 20)."""

    primary: str
    last_model: str = ""
    switches: list[Switch] = field(default_factory=list)

    def note_switch(self, from_model: str, to_model: str, reason: str) -> None:
        """Record a switch (bounded)."""
        self.switches.append(Switch(time.time(), from_model, to_model, reason[:200]))
        del self.switches[:-20]


def endpoint_configs(cfg: LLMConfig) -> list[LLMConfig]:
    """The primary config followed by one config per `llm.fallbacks` entry (other keys shared)."""
    out = [cfg]
    for fb in cfg.fallbacks:
        update = {"base_url": fb.base_url, "api_key": fb.api_key, "model": fb.model}
        out.append(cfg.model_copy(update={**update, "provider": fb.provider, "fallbacks": []}))
    return out


def _label(p: OpenAICompatProvider) -> str:
    return f"{p.cfg.model}@{p.cfg.base_url}"


class FallbackChain:
    """A ChatProvider over several endpoints; the first that answers wins."""

    def __init__(self, providers: Sequence[OpenAICompatProvider]) -> None:
        assert providers, "at least the primary"
        self.providers = list(providers)
        self.status = ModelStatus(primary=_label(self.providers[0]))

    @classmethod
    def from_config(cls, cfg: LLMConfig, http: httpx.AsyncClient, **kw: float) -> FallbackChain:
        """The primary and its fallbacks, sharing one HTTP client."""
        return cls([OpenAICompatProvider(c, http, **kw) for c in endpoint_configs(cfg)])

    @property
    def primary(self) -> OpenAICompatProvider:
        """The first endpoint (whose profile describes the configured model)."""
        return self.providers[0]

    def _give_up_or_switch(self, index: int, err: ProviderError) -> bool:
        """True to try the next endpoint; False when `err` must reach the user."""
        if not err.retryable or index + 1 >= len(self.providers):
            if index > 0:  # the user learns that every configured endpoint was tried
                err.args = (f"{err} (after {index} switch(es) from {self.status.primary})",)
            return False
        here, there = _label(self.providers[index]), _label(self.providers[index + 1])
        log.warning("llm_fallback", from_model=here, to_model=there, error=str(err))
        self.status.note_switch(here, there, str(err))
        return True

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> Completion:
        """One reply, not streamed, from the first endpoint that answers."""
        for index, provider in enumerate(self.providers):
            try:
                done = await provider.complete(messages, tools)
            except ProviderError as err:
                if not self._give_up_or_switch(index, err):
                    raise
                continue
            self.status.last_model = _label(provider)
            return done
        raise AssertionError("unreachable")

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Stream from the first endpoint that answers; a mid-answer failure also moves on."""
        for index, provider in enumerate(self.providers):
            shown = False
            try:
                async for event in provider.stream(messages, tools):
                    shown = shown or isinstance(event, TextChunk)
                    yield event
            except ProviderError as err:
                if not self._give_up_or_switch(index, err):
                    raise
                if shown:  # the next endpoint starts over: say so rather than run texts together
                    yield TextChunk(RESTART_NOTE)
                continue
            self.status.last_model = _label(provider)
            return


def build_provider(cfg: LLMConfig, http: httpx.AsyncClient) -> FallbackChain:
    """The provider the agent talks to: the primary endpoint and its fallbacks."""
    return FallbackChain.from_config(cfg, http)
