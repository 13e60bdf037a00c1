"""Consent: session grants, and the providers that ask (terminal) or decide (third-party channels).

The agent loop, not the tool, asks for consent: it calls the tool's `consent_check`, looks up
a session grant for `consent_scope`, and otherwise asks the interface's ConsentProvider.
"""

from __future__ import annotations

import asyncio
import posixpath
import sys
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from larkbot.context import RequestContext
from larkbot.terminal import read_line
from tools.base import BaseTool


@dataclass(frozen=True)
class ConsentRequest:
    """One question to the user: may `tool` run with `arguments`?"""

    tool: BaseTool
    arguments: dict[str, Any]
    description: str
    scope: str
    always: bool
    context: RequestContext
    call_id: str = ""


@dataclass(frozen=True)
class ConsentDecision:
    """The answer; `reason` is relayed to the model when not allowed.

    `remember`: an allowed, not-`always` call is granted for the rest of the session by scope
    (False for the web's "allow once").
    """

    allowed: bool
    reason: str = ""
    remember: bool = True


class ConsentProvider(Protocol):
    """Asks someone (or decides by rule) whether a call may run."""

    async def decide(self, request: ConsentRequest) -> ConsentDecision:
        """Allow or refuse the call described by `request`."""
        ...


@runtime_checkable
class ConsentScreen(Protocol):
    """Optional provider step run before `consent_check`: refuses on tool flags alone."""

    def screen(self, tool: BaseTool, ctx: RequestContext) -> str | None:
        """A refusal reason, or None to continue with the normal consent rules."""
        ...


def _is_path(scope: str) -> bool:
    return scope.startswith("/")


def scope_covers(granted: str, scope: str) -> bool:
    """True when a grant of `granted` covers `scope`: equal, or `scope` inside that directory."""
    if granted == scope:
        return True
    if not (_is_path(granted) and _is_path(scope)):
        return False
    root = posixpath.normpath(granted)
    target = posixpath.normpath(scope)
    return target == root or target.startswith(root.rstrip("/") + "/")


class ConsentStore:
    """Session grants in memory (never on disk), keyed by consent scope and by who granted.

    A grant covers the calls of the person who gave it: in a shared session (a Lark group) a
    member the owner shared a tool with must not ride on the owner's "yes".
    """

    def __init__(self) -> None:
        self._grants: dict[str, dict[str, set[str]]] = {}

    def grant(self, session_id: str, scope: str, who: str = "") -> None:
        """Remember that `scope` is allowed for `who` for the rest of the session."""
        self._grants.setdefault(session_id, {}).setdefault(who, set()).add(scope)

    def is_granted(self, session_id: str, scope: str, who: str = "") -> bool:
        """True when a grant `who` gave in this session covers `scope` (paths cover subtrees)."""
        granted = self._grants.get(session_id, {}).get(who, ())
        return any(scope_covers(g, scope) for g in granted)

    def clear_session_grants(self, session_id: str) -> None:
        """Forget every grant of a session (when it is deleted or reset)."""
        self._grants.pop(session_id, None)


class TuiConsentProvider:
    """y/N in the terminal, read off the event loop (works with piped stdin; end of input = no)."""

    def __init__(self, out: Any = None) -> None:
        self._out = out
        self._lock = asyncio.Lock()  # one question at a time on one terminal

    async def decide(self, request: ConsentRequest) -> ConsentDecision:
        """Print what the call does and read y/N."""
        out = self._out or sys.stdout
        if request.always:
            note = " (dangerous: asked every time)"
        else:
            note = f" (y also allows {request.scope} for the rest of this session)"
        async with self._lock:
            print(f"\n⚠ {request.tool.name}: {request.description}{note}", file=out, flush=True)
            answer = await read_line("Allow? [y/N] ")
        if answer is None:
            return ConsentDecision(False, "no answer (end of input): the user did not allow it")
        if answer.strip().lower() in ("y", "yes"):
            return ConsentDecision(True, "allowed by the user")
        return ConsentDecision(False, "the user declined")


class ChannelGuardProvider:
    """Third-party channels (Lark): no consent UI. Owners pass; non-owners get no side effects.

    The side-effect refusal is made in `screen`, on the tool's flag alone, before the tool's
    `consent_check` is consulted, so calls the consent rules exempt (file_write under /tmp)
    are refused too. An owner's `consent_always` call goes to `owner_approval` when given
    (e.g. a Lark approval card); without it owners pass.
    """

    def __init__(self, owner_approval: ConsentProvider | None = None) -> None:
        self.owner_approval = owner_approval

    def screen(self, tool: BaseTool, ctx: RequestContext) -> str | None:
        """Refuse a non-owner's call to a side-effect tool."""
        if tool.side_effect and not ctx.is_owner:
            return (
                f"refused: {tool.name} changes things on the owner's machine and only the "
                "bot's owner may use it here. Tell the user you cannot do this for them."
            )
        return None

    async def decide(self, request: ConsentRequest) -> ConsentDecision:
        """Owners pass (or are asked through `owner_approval` for dangerous calls)."""
        if not request.context.is_owner:
            return ConsentDecision(
                False,
                f"{request.tool.name} needs the owner's consent, which cannot be asked in this "
                "chat. Tell the user only the owner can do this.",
            )
        if request.always and self.owner_approval is not None:
            return await self.owner_approval.decide(request)
        return ConsentDecision(True, "owner")
