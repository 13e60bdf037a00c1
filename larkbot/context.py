"""Per-request state: who asked, where, through which interface. Immutable, always explicit.

There is no ambient or default context: every tool call is decided and run with the context
the interface built for it, and a call without one is refused (fail closed). The terminal
builds its owner context itself with `RequestContext.local_owner`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from larkbot.sources import Source

Interface = Literal["cli", "web", "lark"]


@dataclass(frozen=True)
class RequestContext:
    """Identity and place of one agent turn, handed to the policy and to every tool call.

    `uploads` are the files this sender sent with this message (saved in the inbox): the
    policy lets them read those, and only those, even when they are not an owner.
    `untrusted` names the content in this turn's context that no owner wrote (another
    sender's message, a fetched page, an untrusted MCP result); while it is non-empty every
    side effect needs an explicit owner approval naming those sources.
    `input_sources` are the untrusted parts of this turn's own input (a quoted message of
    someone else, a forward, a document): stored with the user message (`policy.provenance`).
    """

    interface: Interface
    session_id: str
    sender_id: str
    is_owner: bool
    chat_id: str = ""
    chat_type: str = ""  # "p2p" | "group" in Lark
    thread_id: str = ""
    message_id: str = ""
    sender_name: str = ""
    scheduled: bool = False  # a scheduled job running for its creator (nobody is watching)
    untrusted: tuple[str, ...] = ()
    uploads: tuple[str, ...] = ()  # resolved paths of the files the sender sent in this turn
    input_sources: tuple[Source, ...] = ()

    @classmethod
    def local_owner(cls, session_id: str, interface: Interface = "cli") -> RequestContext:
        """The owner at their own terminal (or web page): built explicitly by that interface."""
        return cls(interface=interface, session_id=session_id, sender_id="local", is_owner=True)

    def with_session(self, session_id: str) -> RequestContext:
        """Return a copy bound to another session."""
        return replace(self, session_id=session_id)

    def with_untrusted(self, *sources: str) -> RequestContext:
        """Return a copy that also names `sources` as untrusted content of this turn."""
        new = tuple(s for s in dict.fromkeys(sources) if s and s not in self.untrusted)
        return replace(self, untrusted=self.untrusted + new) if new else self

    def with_uploads(self, *paths: str) -> RequestContext:
        """Return a copy that also lets the sender read `paths` (their own uploads)."""
        new = tuple(p for p in dict.fromkeys(paths) if p and p not in self.uploads)
        return replace(self, uploads=self.uploads + new) if new else self

    def with_input_sources(self, *sources: Source) -> RequestContext:
        """Return a copy whose turn input also holds `sources` (text no owner wrote)."""
        new = tuple(s for s in dict.fromkeys(sources) if s not in self.input_sources)
        return replace(self, input_sources=self.input_sources + new) if new else self
