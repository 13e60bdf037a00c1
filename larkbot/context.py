"""Per-request state: who asked, where, through which interface. Immutable by design."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Literal

Interface = Literal["cli", "web", "lark"]


@dataclass(frozen=True)
class RequestContext:
    """Identity and place of one agent turn; passed explicitly and via `current_context`."""

    interface: Interface
    session_id: str
    sender_id: str = "local"
    is_owner: bool = True
    chat_id: str = ""
    chat_type: str = ""  # "p2p" | "group" in Lark
    thread_id: str = ""
    message_id: str = ""
    sender_name: str = ""

    def with_session(self, session_id: str) -> RequestContext:
        """Return a copy bound to another session."""
        return replace(self, session_id=session_id)


current_context: ContextVar[RequestContext | None] = ContextVar("current_context", default=None)


def get_context() -> RequestContext:
    """The context of the running turn; a local owner CLI context outside any turn."""
    ctx = current_context.get()
    return ctx if ctx is not None else RequestContext(interface="cli", session_id="local")
