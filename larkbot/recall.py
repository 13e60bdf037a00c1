"""The agent's seam for long-term memory: a hook the composition root passes in.

The agent knows nothing of how memories are stored or searched; before each turn it asks the
hook for a block to add to the system prompt and for the untrusted sources that block carries
(memories written by non-owners or saved while reading untrusted text), which raise the bar
for side effects exactly like another person's message in the history does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from larkbot.context import RequestContext


@dataclass(frozen=True)
class Recalled:
    """What recall adds to one turn."""

    text: str = ""  # appended to the system prompt ("" adds nothing)
    untrusted: tuple[str, ...] = ()  # how approval cards name the untrusted memories
    tokens: int = 0  # estimated tokens of `text`
    count: int = 0  # memories recalled


class RecallHook(Protocol):
    """`await hook(ctx, message_text)`: the memories relevant to this sender here."""

    async def __call__(self, ctx: RequestContext, query: str) -> Recalled:
        """Recall for one turn; must not raise for storage trouble (return `Recalled()`)."""
        ...
