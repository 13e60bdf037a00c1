"""The one list of what the Lark app must grant: every scope, event and callback, and why.

`larkbot setup` asks the registration for the enabled features' entries, `larkbot doctor` and
`/readyz` name the missing ones with what breaks, `/auth` asks people for the user scopes, and
the README's permission table is printed from here (`python -m larkbot.scopes --markdown`;
tests/test_scopes.py keeps the two equal). A leaf: it imports nothing from larkbot.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["scope", "event", "callback"]
Token = Literal["tenant", "user"]

# Asked in every `/auth` (OAuth device flow) request, never an app scope: it makes Lark issue
# a refresh token, so one authorization outlives the 2-hour access token.
AUTH_ALWAYS = ("offline_access",)


@dataclass(frozen=True)
class Need:
    """One scope, event or callback: the feature that wants it, what uses it, what breaks."""

    kind: Kind
    name: str
    feature: str
    needed_for: str
    without: str
    token: Token = "tenant"  # scopes: the bot's own (tenant) or a person's (user, via /auth)


def _workspace_on(settings: Any) -> bool:
    # Settings without a workspace section (older callers, stand-ins) count as off.
    return bool(getattr(getattr(settings, "workspace", None), "enabled", False))


# feature -> (when it is on, in words; the test on Settings)
FEATURES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "chat": ("always", lambda s: True),
    "streaming": ("`lark.streaming: true` (default)", lambda s: bool(s.lark.streaming)),
    "group_all": ("`lark.group_policy: all`", lambda s: s.lark.group_policy == "all"),
    "workspace": ("`workspace.enabled` (on by default)", _workspace_on),
    "native": ("always (menu, feedback, doc comments, buzz)", lambda s: True),
}


def _scope(name: str, feature: str, needed_for: str, without: str, token: Token = "tenant") -> Need:
    return Need("scope", name, feature, needed_for, without, token)


def _user(name: str, needed_for: str) -> Need:
    return _scope(name, "workspace", needed_for, "fails, even after `/auth`", "user")


MANIFEST: tuple[Need, ...] = (
    _scope("im:message.p2p_msg:readonly", "chat", "receiving direct messages", "DMs never arrive"),
    _scope(
        "im:message.group_at_msg:readonly",
        "chat",
        "receiving group messages that @ the bot",
        "the bot never hears @-mentions in groups",
    ),
    _scope(
        "im:message:send_as_bot",
        "chat",
        "sending and replying (every answer)",
        "no answer is ever posted",
    ),
    _scope(
        "im:message:readonly",
        "chat",
        "quoted messages, merge-forwards, and the images, files, voice and video users send",
        "quotes, forwards and files users send are silently missing",
    ),
    _scope(
        "contact:user.base:readonly",
        "chat",
        "people's names in group histories",
        "short labels such as `user-3f9a2c` instead of names",
    ),
    _scope(
        "im:resource",
        "chat",
        "uploading the images and files the bot sends (`send_file`, screenshots)",
        "`send_file` and screenshots fail",
    ),
    _scope(
        "application:application:self_manage",
        "chat",
        "`larkbot doctor`, `/readyz` and `larkbot setup` reading which scopes the app has, and "
        "`/auth` asking only for the user scopes it enabled",
        "missing scopes cannot be named; `/auth` asks for every user scope",
    ),
    _scope(
        "cardkit:card:write",
        "streaming",
        "the live streaming card of slow turns",
        "one plain card at the end, and a warning in the log",
    ),
    _scope(
        "im:message.group_msg",
        "group_all",
        "every group message, and topic follow-ups without an @ (sensitive)",
        "only @-mentions arrive",
    ),
    _scope(
        "im:message.urgent",
        "native",
        "buzzing (urgent_app, in the app only) an urgent scheduled job's message to its creator, "
        "and an approval still open after `lark.urgent_after_minutes` to its owner",
        "no buzz (the messages themselves still arrive)",
    ),
    _scope(
        "im:message.reactions:read",
        "native",
        "👍/👎 on the bot's answers as feedback (name unconfirmed; lark-cli lists "
        "`im:message:receive_as_bot` for the reaction event)",
        "no feedback is recorded",
    ),
    _scope(
        "docs:document.comment:read",
        "native",
        "reading the comment the bot is @-mentioned in (as the bot, when the commenter has not "
        "authorized)",
        "comment questions cannot be read",
    ),
    _scope(
        "docs:document.comment:create",
        "native",
        "the bot's own reply in a document comment thread",
        "comment questions go unanswered",
    ),
    _scope(
        "drive:drive:readonly",
        "native",
        "receiving `drive.notice.comment_add_v1` (the event's scope per peers; unconfirmed)",
        "@-mentions in document comments never arrive",
    ),
    Need(
        "event",
        "im.message.receive_v1",
        "chat",
        "every message sent to the bot",
        "the bot hears nothing",
    ),
    Need(
        "event",
        "im.message.recalled_v1",
        "chat",
        "a recalled message's turn stops, unanswered",
        "a recalled question is still answered",
    ),
    Need(
        "event",
        "im.chat.member.bot.added_v1",
        "chat",
        "one short welcome when the bot joins a group",
        "no welcome in groups",
    ),
    Need(
        "event",
        "im.chat.access_event.bot_p2p_chat_entered_v1",
        "chat",
        "one short welcome when someone opens a DM with the bot",
        "no welcome in DMs",
    ),
    Need(
        "event",
        "application.bot.menu_v6",
        "native",
        "the bot menu (`lark.menu`: new conversation, my tasks, /auth, help), answered in a DM",
        "menu items do nothing",
    ),
    Need(
        "event",
        "im.message.reaction.created_v1",
        "native",
        "👍/👎 on the bot's answers, stored as feedback (`larkbot_feedback_total`)",
        "no feedback is recorded",
    ),
    Need(
        "event",
        "drive.notice.comment_add_v1",
        "native",
        "@-mentions of the bot in document comments, answered in the comment thread",
        "the bot never answers in documents",
    ),
    Need(
        "callback",
        "card.action.trigger",
        "chat",
        "card buttons (Approve / Deny, forms)",
        "buttons do nothing",
    ),
    _user("docx:document:readonly", "lark_doc_read of docx documents"),
    _user("docs:document.content:read", "lark_doc_read as markdown"),
    _user("wiki:node:read", "lark_doc_read of wiki links"),
    _user("docs:doc:readonly", "lark_doc_read of legacy doc links (…/docs/…)"),
    _user("docx:document:create", "lark_doc_create"),
    _user("docx:document:write_only", "lark_doc_append"),
    _user("wiki:node:create", "lark_doc_create inside a wiki"),
    _user("docs:document.media:upload", "lark_doc_create / lark_doc_append with images"),
    _user("sheets:spreadsheet:readonly", "lark_sheet_read"),
    _user("sheets:spreadsheet", "lark_sheet_write"),
    _user("bitable:app:readonly", "lark_bitable_read"),
    _user("bitable:app", "lark_bitable_write"),
    _user("task:task:read", "lark_task list"),
    _user("task:task:write", "lark_task create / complete"),
    _user("task:tasklist:read", "lark_task list by task list"),
    _user("search:docs:read", "lark_doc_search"),
    _user("contact:user:search", "lark_task assignees given by name"),
    _user("docs:document.comment:read", "reading the comment thread the bot is @-mentioned in"),
    _user("docs:document.comment:create", "replying in a document comment as the commenter"),
)


def enabled(settings: Any) -> list[Need]:
    """The entries of the features `settings` turns on, in manifest order."""
    on = {name for name, (_, test) in FEATURES.items() if test(settings)}
    return [n for n in MANIFEST if n.feature in on]


def user_scopes(settings: Any) -> list[str]:
    """What `/auth` asks a person for: the enabled user scopes, plus AUTH_ALWAYS."""
    return [*AUTH_ALWAYS, *(n.name for n in enabled(settings) if n.token == "user")]


def addons(needs: Iterable[Need]) -> dict[str, Any]:
    """The registration's `addons` (lark_oapi.scene.registration): scopes, events, callbacks."""
    needs = list(needs)
    scopes = {
        token: [n.name for n in needs if n.kind == "scope" and n.token == token]
        for token in ("tenant", "user")
    }
    events = [n.name for n in needs if n.kind == "event"]
    callbacks = [n.name for n in needs if n.kind == "callback"]
    found: dict[str, Any] = {}
    if any(scopes.values()):
        found["scopes"] = {token: names for token, names in scopes.items() if names}
    if events:
        found["events"] = {"items": {"tenant": events}}
    if callbacks:
        found["callbacks"] = {"items": callbacks}
    return found


def markdown() -> str:
    """The README's permission table (scopes, then events and callbacks)."""
    rows = [
        "| scope | token | needed when | what needs it | without it |",
        "| --- | --- | --- | --- | --- |",
    ]
    for n in MANIFEST:
        if n.kind == "scope":
            when = FEATURES[n.feature][0]
            rows.append(f"| `{n.name}` | {n.token} | {when} | {n.needed_for} | {n.without} |")
    rows += ["", "| event or callback | what needs it | without it |", "| --- | --- | --- |"]
    for n in MANIFEST:
        if n.kind != "scope":
            rows.append(f"| `{n.name}` ({n.kind}) | {n.needed_for} | {n.without} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    """`python -m larkbot.scopes --markdown`: print the README's table."""
    if argv != ["--markdown"]:
        print("usage: python -m larkbot.scopes --markdown", file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
