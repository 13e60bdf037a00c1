"""The `/auth` card: the verification link as a button, the user code, what is asked for."""

from __future__ import annotations

from typing import Any

from cards.lark_budget import base_card, grey_note

TEXT = {
    "en": {
        "title": "Authorize larkbot to act as you",
        "title_more": "Grant larkbot more access",
        "body": "Open the link and approve. The bot will then **{what}** — as you, "
        "only when you ask.",
        "code": "Code: **{code}** (valid for {minutes} min)",
        "button": "Open Lark authorization",
        "note": "Only you can see this. Don't forward it: whoever approves becomes the "
        "account the bot uses for you, and a different person is refused.",
    },
    "zh": {
        "title": "授权机器人以你的身份操作",
        "title_more": "授予机器人更多权限",
        "body": "打开链接并同意授权。之后机器人可以**{what}**——以你的身份，且仅在你提出请求时。",
        "code": "验证码：**{code}**（{minutes} 分钟内有效）",
        "button": "打开飞书授权页",
        "note": "仅你可见，请勿转发：同意授权的人的身份会被使用，若不是你本人会被拒绝。",
    },
}


def auth_card(
    url: str, user_code: str, minutes: int, what: str, lang: str, more: bool = False
) -> dict[str, Any]:
    """The card a person gets for `/auth` (or for scopes a tool found missing: `more`)."""
    t = TEXT["zh" if lang == "zh" else "en"]
    button: dict[str, Any] = {
        "tag": "button",
        "text": {"tag": "plain_text", "content": t["button"]},
        "type": "primary_filled",
        "behaviors": [{"type": "open_url", "default_url": url}],
    }
    elements = [
        {"tag": "markdown", "content": t["body"].format(what=what)},
        {"tag": "markdown", "content": t["code"].format(code=user_code, minutes=minutes)},
        button,
        grey_note(t["note"]),
    ]
    return base_card(t["title_more" if more else "title"], elements, color="blue")
