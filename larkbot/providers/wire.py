"""The request body one provider gets: its thinking switch, its token key, its reasoning echo.

Assistant messages keep the model's chain of thought under `reasoning_content` in the session
history; `outgoing_messages` sends it back, or strips it, exactly as the profile's rule says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from larkbot.config import LLMConfig
from larkbot.errors import ProviderError
from larkbot.providers import echo_rules
from larkbot.providers.base import Message
from larkbot.providers.profiles import (
    SAMPLING_KEYS,
    Echo,
    ModelRule,
    Profile,
    get_profile,
    model_traits,
)

REASONING_KEY = "reasoning_content"  # where the history keeps an assistant message's thinking
INTERNAL_PREFIX = "larkbot_"  # keys of ours that never go on the wire
REASONING_FIELDS = ("reasoning_content", "reasoning")  # DeepSeek/Qwen/GLM/Kimi; vLLM/Ollama


@dataclass(frozen=True)
class Wire:
    """A resolved profile + model traits + the user's switches, for one endpoint."""

    cfg: LLMConfig
    profile: Profile
    traits: ModelRule

    @classmethod
    def for_config(cls, cfg: LLMConfig) -> Wire:
        """Resolve `llm.provider` (auto: from base_url) and the model's row of its table."""
        profile = get_profile(cfg.provider, cfg.base_url)
        return cls(cfg, profile, model_traits(profile, cfg.model))

    @property
    def thinking(self) -> bool:
        """Whether requests run in thinking mode (llm.thinking, else the model's default)."""
        if self.cfg.thinking != "auto":
            return self.cfg.thinking == "on"
        return self.traits.reasoning

    @property
    def echo(self) -> Echo:
        """The reasoning echo rule in force (llm.reasoning_echo, else a learned rule, else the
        tables)."""
        if self.cfg.reasoning_echo != "auto":
            return self.cfg.reasoning_echo
        taught = echo_rules.learned(self.cfg.base_url, self.cfg.model)
        return taught or self.traits.echo or self.profile.echo

    def echo_after(self, messages: Sequence[Message], err: ProviderError) -> Echo | None:
        """The rule to send `messages` again under when `err` refused the reasoning echo."""
        if self.cfg.reasoning_echo != "auto":
            return None  # the operator's rule stands
        if not echo_rules.names_reasoning(err.status, str(err)):
            return None
        return echo_rules.other_rule(messages, self.echo, outgoing_messages)

    def learn(self, echo: Echo) -> None:
        """Keep `echo` for this endpoint and model: the server accepted it after a refusal."""
        echo_rules.learn(self.cfg.base_url, self.cfg.model, echo)

    @property
    def context_tokens(self) -> int:
        """The model's context window (llm.context_tokens, else the tables)."""
        return self.cfg.context_tokens or self.traits.context or self.profile.context

    def payload(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        stream: bool,
        echo: Echo | None = None,
    ) -> dict[str, Any]:
        """The JSON body of one Chat Completions request (`echo`: instead of the rule in force)."""
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": outgoing_messages(messages, echo or self.echo),
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}  # usage in the last chunk
        if tools:
            body["tools"] = list(tools)
        thinking = self.thinking
        if self.traits.thinking_params and self.cfg.thinking != "auto":
            body.update(self.profile.thinking_on if thinking else self.profile.thinking_off)
        if thinking and not stream and self.profile.non_stream_thinking_off:
            body.update(self.profile.thinking_off)
            thinking = False
        if thinking and self.cfg.reasoning_effort and self.profile.effort_key:
            body[self.profile.effort_key] = self.cfg.reasoning_effort
        if self.cfg.temperature is not None:
            body["temperature"] = self.cfg.temperature
        if self.cfg.max_tokens is not None:
            body[self.profile.max_tokens_key] = self.cfg.max_tokens
        dropped: tuple[str, ...] = SAMPLING_KEYS if self.traits.fixed_sampling else ()
        if thinking:
            dropped = (*dropped, *self.profile.drop_when_thinking)
        for key in dropped:
            body.pop(key, None)
        return body

    def headers(self) -> dict[str, str]:
        """Content type and the key, in the header this provider reads it from."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.cfg.api_key.get_secret_value()
        if key and self.profile.auth_header == "api-key":
            headers["api-key"] = key
        elif key:
            headers["Authorization"] = f"Bearer {key}"
        return headers


def outgoing_messages(messages: Sequence[Message], echo: Echo) -> list[Message]:
    """Copies of `messages` with reasoning sent back or stripped per `echo`, internals removed.

    tool_turns: every assistant message between two user messages where the model called a
    tool carries `reasoning_content` ("" when none was recorded, e.g. after a provider switch);
    elsewhere it is stripped (DeepSeek ignores it there, and it only costs bandwidth).
    returned: those messages carry it only where reasoning was recorded.
    """
    echoed = _echoed(messages, echo)
    out: list[Message] = []
    for i, m in enumerate(messages):
        copy = {
            k: v for k, v in m.items() if k != REASONING_KEY and not k.startswith(INTERNAL_PREFIX)
        }
        recorded = m.get(REASONING_KEY)
        if i in echoed and (echo != "returned" or (isinstance(recorded, str) and recorded)):
            copy[REASONING_KEY] = recorded if isinstance(recorded, str) else ""
        out.append(copy)
    return out


def _echoed(messages: Sequence[Message], echo: Echo) -> set[int]:
    """Positions of the assistant messages whose reasoning goes back under `echo`."""
    if echo == "never":
        return set()
    spans: list[list[int]] = [[]]
    for i, m in enumerate(messages):
        if m.get("role") == "user":
            spans.append([])
        elif m.get("role") == "assistant":
            spans[-1].append(i)
    keep: set[int] = set()
    for span in spans:
        if echo == "all" or any(messages[i].get("tool_calls") for i in span):
            keep.update(span)
    return keep


def reasoning_of(delta: dict[str, Any]) -> str:
    """The chain-of-thought text of a response message or delta, whichever field carries it."""
    for key in REASONING_FIELDS:
        value = delta.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
