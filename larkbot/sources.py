"""Who wrote a piece of text the model sees: the `Kind`s and one `Source` (ground floor).

The request context and the tools' results carry these; `larkbot.policy.provenance` stores
them with the history and decides the bar they raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """Who wrote a piece of text; every kind but OWNER is untrusted."""

    OWNER = "owner"  # an owner's own words (never needs marking)
    PERSON = "person"  # another person: a group member, a quoted or forwarded message
    WEB = "web"  # a web page, search result, browser page
    DOCUMENT = "document"  # a document's text (an attachment, a workspace document)
    FILE = "file"  # a file of unknown origin (the inbox, browser downloads, fetched files)
    TOOL = "tool"  # a tool's output of outside data (an MCP result, a network command)
    MEMORY = "memory"  # a memory recalled from an untrusted turn


@dataclass(frozen=True)
class Source:
    """One piece of text in the context and who wrote it; `label` is what a card shows."""

    kind: Kind
    label: str

    @property
    def trusted(self) -> bool:
        """Only an owner's own text is trusted."""
        return self.kind is Kind.OWNER

    def to_json(self) -> dict[str, str]:
        """As stored in a message's `PROVENANCE_KEY` list."""
        return {"kind": self.kind.value, "label": self.label}

    @classmethod
    def from_json(cls, raw: Any) -> Source | None:
        """A stored source; an unreadable entry counts as untrusted text of unknown origin."""
        if not isinstance(raw, Mapping):
            return None
        try:
            kind = Kind(str(raw.get("kind")))
        except ValueError:
            kind = Kind.TOOL
        return cls(kind, str(raw.get("label") or f"text of unknown origin ({kind})"))
