"""History within a token budget: when it overflows, old turns become a model-written summary.

The summary is appended to the session as a marker message followed by a copy of the turns
kept verbatim, so the next load starts from the marker (older rows stay in the database); the
marker records how many messages it copied, so `for_display` can show the session once. The
note reaches the model inside the system prompt, which every provider accepts; the marker
keeps the provenance of the text it condenses (`policy/provenance.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from larkbot.errors import ProviderError
from larkbot.logs import get_logger
from larkbot.policy.provenance import mark, sources_of
from larkbot.providers.base import ChatProvider, Message
from larkbot.providers.tokens import messages_tokens, text_tokens
from larkbot.storage.sessions import SessionStore

log = get_logger(__name__)

SUMMARY_KEY = "larkbot_summary"  # marks the summary message; its value: messages copied after it
MAX_DEFAULT_BUDGET = 48_000  # tokens; half of a 1M window per turn would cost a fortune
LINE_CHARS = 1_500  # each message is cut to this many characters in the summariser's input
SUMMARY_PROMPT = (
    "You condense a chat between a user and an AI assistant so the assistant can go on "
    "without the full transcript. Write a compact note (at most 250 words, in the language of "
    "the conversation): facts learned, decisions, open tasks, user preferences, names, numbers "
    "and file paths that may matter later. No greetings, no commentary."
)


def history_budget(configured: int, context_tokens: int) -> int:
    """agent.history_max_tokens, or half the model's context window (capped)."""
    return configured or min(context_tokens // 2, MAX_DEFAULT_BUDGET)


def since_summary(history: list[Message]) -> tuple[str, list[Message]]:
    """(the latest summary note or "", the messages after it)."""
    for i in range(len(history) - 1, -1, -1):
        if SUMMARY_KEY in history[i]:
            return str(history[i].get("content") or ""), history[i + 1 :]
    return "", history


def for_display(history: list[Message]) -> list[Message]:
    """The stored history as the user had it: no summary markers, no copies of kept turns."""
    out: list[Message] = []
    skip = 0
    for m in history:
        if SUMMARY_KEY in m:
            copied = m[SUMMARY_KEY]
            skip = copied if type(copied) is int else 0
        elif skip:
            skip -= 1
        else:
            out.append(m)
    return out


def with_summary(system: Message, note: str) -> Message:
    """The system message with the summary note appended."""
    if not note:
        return system
    extra = f"\n\n## Earlier in this conversation (summary)\n{note}"
    return {**system, "content": f"{system.get('content') or ''}{extra}"}


def _turns(messages: list[Message]) -> list[list[Message]]:
    turns: list[list[Message]] = []
    for m in messages:
        if m.get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append(m)
    return turns


def _transcript(note: str, messages: list[Message], limit_tokens: int) -> str:
    lines: list[str] = []
    for m in messages:
        role = m.get("role")
        content = m.get("content")
        text = content if isinstance(content, str) else "[non-text content]"
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            text += f"\n[called {fn.get('name')} {str(fn.get('arguments', ''))[:300]}]"
        label = {"user": "User", "assistant": "Assistant", "tool": "Tool result"}.get(
            str(role), str(role)
        )
        if text.strip():
            lines.append(f"{label}: {text.strip()[:LINE_CHARS]}")
    while lines and text_tokens("\n".join(lines)) > limit_tokens:
        lines.pop(0)  # the summariser's own request must fit too: oldest lines go first
    head = f"Summary so far:\n{note}\n\n" if note else ""
    return f"{head}Conversation to fold into the summary:\n" + "\n".join(lines)


CUT_NOTE = "\n[… cut to fit the history budget]"


def shrink_to(messages: list[Message], budget: int) -> list[Message]:
    """Cut tool results, oldest first, until `messages` fit (a small context, one big turn)."""
    over = messages_tokens(messages) - budget
    if over <= 0:
        return messages
    out: list[Message] = []
    for m in messages:
        content = m.get("content")
        if over > 0 and m.get("role") == "tool" and isinstance(content, str) and len(content) > 400:
            tokens = text_tokens(content)
            room = max(0, tokens - over - text_tokens(CUT_NOTE))
            keep = max(200, len(content) * room // tokens - 4)  # -4: the estimate rounds up
            cut = content[:keep] + CUT_NOTE
            over -= tokens - text_tokens(cut)
            m = {**m, "content": cut}
        out.append(m)
    return out


class HistoryBudget:
    """Keeps what the model sees of a session within a token budget."""

    def __init__(self, provider: ChatProvider, store: SessionStore) -> None:
        self.provider = provider
        self.store = store

    async def fit(
        self,
        session_id: str,
        history: list[Message],
        budget: int,
        redact: Callable[[list[Message]], list[Message]] = lambda m: m,
    ) -> tuple[str, list[Message]]:
        """(summary note, recent messages) within `budget` tokens; summarises on overflow.

        `redact` is applied to what the summariser reads (private tool results in a group).
        The newest turn is always kept; when it alone is too large its tool results are cut.
        """
        note, recent = await self._fit(session_id, history, budget, redact)
        return note, shrink_to(recent, budget - text_tokens(note))

    async def _fit(
        self,
        session_id: str,
        history: list[Message],
        budget: int,
        redact: Callable[[list[Message]], list[Message]],
    ) -> tuple[str, list[Message]]:
        note, recent = since_summary(history)
        if text_tokens(note) + messages_tokens(recent) <= budget:
            return note, recent
        turns = _turns(recent)
        keep: list[list[Message]] = []
        size = 0
        for turn in reversed(turns):  # the newest turns, verbatim, in half the budget
            cost = messages_tokens(turn)
            if keep and size + cost > budget // 2:
                break
            keep.insert(0, turn)
            size += cost
        old = [m for turn in turns[: len(turns) - len(keep)] for m in turn]
        kept = [m for turn in keep for m in turn]
        if not old:
            return note, kept
        try:
            fresh = await self._summarise(note, redact(old), budget)
        except ProviderError as err:  # the turn goes on; nothing is lost from the database
            log.warning("history_summary_failed", session=session_id, error=str(err))
            return note, kept
        marker: Message = {"role": "system", "content": fresh, SUMMARY_KEY: len(kept)}
        # what no owner wrote lives on in the summary: its sources go with it (until /new)
        earlier = history[: len(history) - len(kept)]
        marker = mark(marker, *(s for m in earlier for s in sources_of(m)))
        await self.store.append(session_id, [marker, *kept])
        log.info("history_summarised", session=session_id, turns=len(turns) - len(keep))
        return fresh, kept

    async def _summarise(self, note: str, old: list[Message], budget: int) -> str:
        transcript = _transcript(note, old, max(budget, 2_000))
        done = await self.provider.complete(
            [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": transcript}]
        )
        text = done.text.strip()
        if not text:
            raise ProviderError("the model returned an empty summary")
        return text
