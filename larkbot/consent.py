"""Consent providers: how an interface *presents* the policy's `Ask` to the owner.

They decide nothing: `larkbot.policy` has already decided that this call needs a yes from
the owner. A provider shows `request.description` (and the untrusted `request.sources`) and
returns the owner's answer. Lark: an Approve / Deny card (`lark/approvals/approval.py`); the
terminal: y/N; the web: a consent card on the event stream. Where nobody can be asked:
`NobodyToAsk`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from larkbot.context import RequestContext
from tools.base import BaseTool


@dataclass(frozen=True)
class ConsentRequest:
    """One question to the owner: may `tool` run with `arguments`? (the policy's Ask)."""

    tool: BaseTool
    arguments: dict[str, Any]
    description: str
    scope: str
    always: bool
    context: RequestContext
    call_id: str = ""
    sources: tuple[str, ...] = ()  # untrusted content that raised the bar, named on the card
    confirm_by: str = ""  # only this person (the asker) may answer: a workspace write


@dataclass(frozen=True)
class ConsentAnswer:
    """The owner's answer; `for_session` remembers a yes for `scope` (never for `always`)."""

    allowed: bool
    reason: str = ""
    for_session: bool = False


class ConsentProvider(Protocol):
    """Presents an Ask to the owner on one interface and returns their answer."""

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        """Show the question and wait (bounded) for the owner's answer."""
        ...


class NobodyToAsk:
    """For paths with no consent UI (a scheduled run with no chat): every Ask is a no."""

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        """Refuse: there is nobody here who could say yes."""
        return ConsentAnswer(False, "the owner's approval cannot be asked here")
