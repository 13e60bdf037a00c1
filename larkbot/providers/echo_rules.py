"""Reasoning echo rules a server taught by refusing a request (HTTP 400 naming the field).

A thinking model behind a gateway (one-api, new-api, LiteLLM) under a custom alias matches no
table row. When such a server answers 400 and its message names `reasoning_content` (or
`reasoning`), the request is sent once more under the other rule; if that one is accepted, the
rule is remembered for this base_url + model for the life of the process.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from larkbot.logs import get_logger
from larkbot.providers.base import Message
from larkbot.providers.profiles import Echo

log = get_logger(__name__)

REFUSAL_STATUSES = frozenset({400, 422})
# `\b` keeps "reasoning_effort" out: an unsupported effort is no echo problem
NAMES_REASONING = re.compile(r"reasoning_content|\breasoning\b", re.IGNORECASE)

_learned: dict[tuple[str, str], Echo] = {}  # (base_url, model) -> the rule that was accepted


def learned(base_url: str, model: str) -> Echo | None:
    """The rule a refusal taught for this endpoint and model, if any."""
    return _learned.get((base_url, model))


def learn(base_url: str, model: str, echo: Echo) -> None:
    """Remember that this endpoint accepted `echo` after refusing the rule before it."""
    if _learned.get((base_url, model)) != echo:
        log.info("llm_reasoning_echo_learned", base_url=base_url, model=model, echo=echo)
    _learned[(base_url, model)] = echo


def names_reasoning(status: int | None, message: str) -> bool:
    """Whether an error is a refusal that names the reasoning field."""
    return status in REFUSAL_STATUSES and bool(NAMES_REASONING.search(message))


def other_rule(
    messages: Sequence[Message],
    current: Echo,
    render: Callable[[Sequence[Message], Echo], list[Message]],
) -> Echo | None:
    """The rule to retry a refused request under, or None when no other rule changes the body.

    Reasoning missing somewhere `tool_turns` would put it: send it (with "" where none was
    recorded, as DeepSeek and Kimi demand). Else, when reasoning was sent, leave it out (the
    older deepseek-reasoner refuses any).
    """
    sent = render(messages, current)
    if render(messages, "tool_turns") != sent:
        return "tool_turns"
    if current != "never" and render(messages, "never") != sent:
        return "never"
    return None
