"""The three answers the policy gives for one tool call: Allow, Refuse(reason), Ask(prompt…)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Allow:
    """The call may run; `reason` is what the audit log records."""

    reason: str = "allowed"


@dataclass(frozen=True)
class Refuse:
    """The call must not run; `reason` is relayed to the model (and audited)."""

    reason: str


@dataclass(frozen=True)
class Ask:
    """The call may run only if the owner says yes, through the interface's consent provider.

    `prompt` is the sentence shown to the owner; `scope` is what a "yes for this session"
    covers (a tool name, a directory, an origin); `always` asks are never remembered;
    `sources` names the untrusted content that raised the bar, shown on the card.
    `confirm_by` (the asker's id) makes it a confirmation only that person may give: a
    workspace write acting as them (`acts_as_asker`), not an owner's approval.
    """

    prompt: str
    scope: str
    always: bool = False
    sources: tuple[str, ...] = ()
    confirm_by: str = ""


Decision = Allow | Refuse | Ask
