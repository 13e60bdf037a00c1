"""`find_tools(query)`: activates matching tools for the rest of the session (fast path)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from larkbot.context import RequestContext
from tools.base import BaseTool, ContextTool
from tools.workspace.links import has_doc_link

MAX_MATCHES = 5
_WORD = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]+")


def linked_tools(text: str) -> frozenset[str]:
    """Tools a message brings into its own turn without a find_tools round: a pasted Lark
    document link (in the message or the message it quotes) brings lark_doc_read."""
    return frozenset({"lark_doc_read"}) if has_doc_link(text) else frozenset()


def tokens(text: str) -> set[str]:
    """Lower-case words; CJK runs become character bigrams (no spaces to split on)."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower().replace("_", " ")):
        if word.isascii():
            if len(word) > 1:
                out.add(word)
        else:
            out.update(word[i : i + 2] for i in range(max(1, len(word) - 1)))
    return out


def score(query: set[str], tool: BaseTool) -> int:
    """Token overlap with the tool's name (weighted) and description."""
    name = tokens(tool.name)
    return 3 * len(query & name) + len(query & tokens(tool.description))


class FindToolsTool(ContextTool):
    """Built into the loop: searches this sender's tools and activates the best matches."""

    name = "find_tools"
    description = (
        "Find and enable more tools. Give a few words about what you need "
        "(e.g. 'web search', 'schedule a reminder', 'search files'); matching tools become "
        "callable for the rest of this conversation."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what you need to do"}},
        "required": ["query"],
    }

    def __init__(
        self,
        catalog: Callable[[RequestContext], list[BaseTool]],
        activate: Callable[[str, list[str]], None],
    ) -> None:
        self._catalog = catalog
        self._activate = activate

    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> str:
        """Return the matches (now enabled), or every tool name when nothing matched."""
        query = str(kwargs.get("query", ""))
        candidates = [t for t in self._catalog(ctx) if t.name != self.name]
        wanted = tokens(query)
        exact = [t for t in candidates if t.name in query]
        ranked = sorted(candidates, key=lambda t: score(wanted, t), reverse=True)
        picked = exact + [t for t in ranked if score(wanted, t) > 0 and t not in exact]
        picked = picked[:MAX_MATCHES]
        if not picked:
            names = ", ".join(t.name for t in candidates) or "none"
            return f"No tool matched {query!r}. Tools that exist here: {names}."
        self._activate(ctx.session_id, [t.name for t in picked])
        lines = [f"- {t.name}: {t.description.splitlines()[0]}" for t in picked]
        return "Enabled for this conversation:\n" + "\n".join(lines)
