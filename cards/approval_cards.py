"""Approval cards: Approve / Deny for an owner's dangerous call, and their resolved states."""

from __future__ import annotations

import json
from typing import Any

from cards.lark_budget import base_card, grey_note

MAX_SHOWN_CHARS = 1500
RESOLVED = {
    "approved": ("green", "✅ Approved — running it."),
    "denied": ("red", "❌ Denied — not run."),
    "expired": ("grey", "⌛ Expired — not run."),
}


def _call_text(tool: str, arguments: dict[str, Any]) -> str:
    """The call as a code block: a shell command as is, other tools as JSON; cut to fit."""
    command = arguments.get("command") if tool == "shell" else None
    text = (
        command if isinstance(command, str) else json.dumps(arguments, ensure_ascii=False, indent=1)
    )
    if len(text) > MAX_SHOWN_CHARS:
        text = text[: MAX_SHOWN_CHARS - 1] + "…"
    return "```text\n" + text.replace("```", "ˋˋˋ") + "\n```"


def _body(tool: str, description: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"tag": "markdown", "content": f"**{tool}**: {description}"},
        {"tag": "markdown", "content": _call_text(tool, arguments)},
    ]


def _button(label: str, kind: str, approval_id: str, decision: str) -> dict[str, Any]:
    return {
        "tag": "column",
        "width": "auto",
        "elements": [
            {
                "tag": "button",
                "text": {"tag": "plain_text", "content": label},
                "type": kind,
                "behaviors": [
                    {"type": "callback", "value": {"approval": approval_id, "decision": decision}}
                ],
            }
        ],
    }


def _question(
    approval_id: str,
    tool: str,
    description: str,
    arguments: dict[str, Any],
    sources: tuple[str, ...],
    where: str,
    buttons: tuple[str, str],
    who: str,
) -> list[dict[str, Any]]:
    """What would run, where it was asked, the untrusted text behind it, the two buttons and
    who may answer until when (`who` ends with that sentence)."""
    elements = _body(tool, description, arguments)
    if where:
        elements.insert(0, grey_note(where[:200]))
    if sources:
        named = "\n".join(f"- {s[:200]}" for s in sources[:5])
        more = f"\n- … and {len(sources) - 5} more" if len(sources) > 5 else ""
        elements.append(
            {
                "tag": "markdown",
                "content": f"⚠️ **Not written by you, in this conversation:**\n{named}{more}",
            }
        )
        elements.append(grey_note(f"Started from {sources[0][:200]}; /new starts clean."))
    yes, no = buttons
    elements.append(
        {
            "tag": "column_set",
            "horizontal_spacing": "8px",
            "columns": [
                _button(yes, "primary_filled", approval_id, "approve"),
                _button(no, "danger", approval_id, "deny"),
            ],
        }
    )
    elements.append(grey_note(who))
    return elements


def _expires(timeout: float) -> str:
    minutes = f"{timeout / 60:g} min" if timeout >= 60 else f"{timeout:g} s"
    return f"Expires in {minutes} (then not run)."


def approval_card(
    approval_id: str,
    tool: str,
    description: str,
    arguments: dict[str, Any],
    timeout: float,
    sources: tuple[str, ...] = (),
    where: str = "",
) -> dict[str, Any]:
    """The question: what would run, Approve / Deny buttons, who may answer and until when.

    `sources` names the untrusted content in the conversation (another sender's message, a
    quote, a document, a web page read earlier) that made this call need an approval: the
    owner sees where the idea may have come from, and that `/new` starts clean.
    `where`: a line saying where it was asked, for a card shown away from that chat (a DM).
    """
    who = f"Only the bot's owner can answer. {_expires(timeout)}"
    elements = _question(
        approval_id, tool, description, arguments, sources, where, ("Approve", "Deny"), who
    )
    return base_card("Approval needed", elements, "orange", subtitle=tool)


def resolved_card(
    state: str, tool: str, description: str, arguments: dict[str, Any], by: str = ""
) -> dict[str, Any]:
    """The card after the answer (or the timeout): no buttons, the outcome in colour."""
    color, line = RESOLVED[state]
    elements = _body(tool, description, arguments)
    who = f" (by <at id={by}></at>)" if by and state != "expired" else ""
    elements.append({"tag": "markdown", "content": line + who})
    return base_card("Approval", elements, color, subtitle=tool)


def confirm_card(
    approval_id: str,
    tool: str,
    description: str,
    arguments: dict[str, Any],
    timeout: float,
    asker: str,
    sources: tuple[str, ...] = (),
    where: str = "",
) -> dict[str, Any]:
    """A workspace write shown to the person it acts for: exactly what changes, Confirm /
    Cancel, and that only they can answer (it runs with their own Lark access). `where`: as
    for `approval_card`."""
    who = (
        f"Only <at id={asker}></at>, who asked, can confirm: it runs with their Lark access. "
        + _expires(timeout)
    )
    elements = _question(
        approval_id, tool, description, arguments, sources, where, ("Confirm", "Cancel"), who
    )
    return base_card("Confirm this change", elements, "blue", subtitle=tool)


PENDING_WHERE = {
    "ephemeral": "in a card only they can see",
    "dm": "in a direct message",
}
OUTCOME_LINES = {
    "approved": "✅ Approved — running it.",
    "denied": "❌ Denied — not run.",
    "expired": "⌛ Not answered in time — not run.",
}


def pending_notice_card(tool: str, where: str) -> dict[str, Any]:
    """The group's one short line while its approval is asked privately (`PENDING_WHERE` key)."""
    line = f"⏳ Approval pending for **{tool}**, asked of the person who must decide "
    return base_card(None, [{"tag": "markdown", "content": line + PENDING_WHERE[where] + "."}])


def outcome_notice_card(state: str, tool: str) -> dict[str, Any]:
    """That line once the approval is decided (or expired): the outcome, nothing private."""
    return base_card(None, [{"tag": "markdown", "content": f"**{tool}**: {OUTCOME_LINES[state]}"}])
