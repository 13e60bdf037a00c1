"""What a Lark error code means for the operator, and the fix (logs, doctor, error messages).

Codes from the Lark Open Platform's generic and IM error pages (see docs/architecture.md).
"""

from __future__ import annotations

CREDENTIALS_FIX = (
    "copy lark.app_id and lark.app_secret (LARK_APP_ID / LARK_APP_SECRET) from the app's "
    "Credentials & Basic Info page, and check the app is enabled and published"
)

HINTS: dict[int, str] = {
    10003: f"Lark refused the app id or secret: {CREDENTIALS_FIX}",
    10014: "wrong lark.app_secret: copy it from the app's credentials page",
    99991543: "wrong lark.app_id or lark.app_secret: copy them from the app's credentials page",
    99991662: "the app is disabled or not installed in this tenant: publish a version",
    99991673: "the app is disabled or not installed in this tenant: publish a version",
    99991672: "the app lacks the scope this API needs: add it under Permissions & Scopes "
    "(the error message names it) and publish a new version",
    99991676: "the token lacks the scope this API needs: add it and publish a new version",
    230001: "Lark refused the request's parameters",
    230002: "the bot is not in this chat: add the bot to the group (group settings → Bots)",
    230006: "the bot capability is off: enable it under Features → Bot and publish a version",
    230013: "the user is outside the app's availability scope: add them (or everyone) under "
    "Version Management & Release → Availability, and publish",
    230018: "the bot may not speak in this chat (group settings restrict who can send)",
    230035: "the bot may not speak in this chat (group settings restrict who can send)",
    230020: "Lark's per-chat rate limit (5 messages/s): retried",
    230022: "Lark blocked the content (content safety / DLP)",
    230025: "the message is too large for Lark (text 150 KB, post and card 30 KB)",
    230028: "Lark blocked the content (content safety / DLP)",
    230053: "the user blocked the bot",
    230099: "Lark could not build the card (its message names the element)",
    232009: "the chat was dissolved",
    300301: "the CardKit card was not found (expired or never created)",
}

SCOPE_CODES = frozenset({99991672, 99991676, 99991679})


def hint_for(code: int, msg: str = "") -> str:
    """The operator's hint for a Lark error code ('' when there is none)."""
    hint = HINTS.get(code, "")
    if code in SCOPE_CODES and msg:
        hint = f"{hint} — Lark said: {msg[:200]}"
    return hint
