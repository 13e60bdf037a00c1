"""What `/auth` says, in English and Chinese (the language of the chat it was sent in)."""

from __future__ import annotations

import re
import time

_CJK = re.compile(r"[\u3400-\u9fff]")

EN = {
    "card_sent_dm": "I sent you the authorization card: open its link and approve.",
    "card_sent_group": "I sent you a DM.",
    "start_failed": "Could not start the authorization: {why}. Try again later.",
    "authorized": "Authorized as {name}. I can now {what} — as you, when you ask.",
    "mismatch": "The authorization was approved by {who}, not by you, so I discarded it. "
    "Open the link yourself: send /auth again.",
    "access_denied": "You declined the authorization; nothing was stored.",
    "expired_token": "The authorization code expired. Send /auth for a new one.",
    "other": "The authorization did not complete ({why}). Send /auth to try again.",
    "none": "You have not authorized me. Send /auth to do it.",
    "pending": "Your authorization is waiting for your approval (see the card I sent).",
    "status": "Authorized as {name}: I can {what}. Valid until {until} (renewed automatically).",
    "revoked": "Your authorization is removed; I can no longer act as you.",
    "nothing": "There was no authorization to remove.",
    "unsigned": "This bot cannot verify that the message came from Lark (no lark.encrypt_key), "
    "so it does not change authorizations.",
    "usage": "Usage: /auth, /auth status, /auth revoke",
    "off": "The Lark workspace tools are not available to you here, so there is nothing to "
    "authorize.",
    "skipped": "Not asked for, because this bot's Lark app has not enabled them yet: {what}. "
    "Those features will not work until an admin of the app enables them at {link} "
    "(then send /auth again).",
    "none_enabled": "This bot's Lark app has not enabled any of the permissions the workspace "
    "tools need ({what}), so there is nothing to authorize yet. An admin of the app can enable "
    "them at {link}.",
}
ZH = {
    "card_sent_dm": "已发送授权卡片：打开其中的链接并同意授权。",
    "card_sent_group": "已私聊发给你。",
    "start_failed": "无法开始授权：{why}。请稍后再试。",
    "authorized": "已授权，身份：{name}。现在我可以以你的身份{what}（仅在你提出请求时）。",
    "mismatch": "授权是由 {who} 而不是你本人同意的，已丢弃。请自己打开链接：再发一次 /授权。",
    "access_denied": "你拒绝了授权，没有保存任何内容。",
    "expired_token": "授权码已过期。发送 /授权 获取新的。",
    "other": "授权未完成（{why}）。发送 /授权 重试。",
    "none": "你还没有授权。发送 /授权 进行授权。",
    "pending": "你的授权正在等待你的同意（见我发的卡片）。",
    "status": "已授权，身份：{name}：我可以{what}。有效期至 {until}（自动续期）。",
    "revoked": "已取消授权，我不再能以你的身份操作。",
    "nothing": "没有可取消的授权。",
    "unsigned": "机器人无法验证消息来自飞书（未设置 lark.encrypt_key），因此不会更改授权。",
    "usage": "用法：/授权、/auth status、/取消授权",
    "off": "此处你不能使用飞书云文档等工具，无需授权。",
    "skipped": "以下权限未申请，因为机器人的飞书应用尚未开通：{what}。"
    "应用管理员在 {link} 开通之前，这些功能无法使用（开通后请再发一次 /授权）。",
    "none_enabled": "机器人的飞书应用尚未开通云文档等工具需要的任何权限（{what}），暂时无需授权。"
    "应用管理员可以在 {link} 开通。",
}


def lang_of(text: str) -> str:
    """ "zh" when the message has Chinese characters (e.g. /授权), else "en"."""
    return "zh" if _CJK.search(text) else "en"


def say(key: str, lang: str, **values: str) -> str:
    """The text `key` in `lang`, filled in."""
    return (ZH if lang == "zh" else EN)[key].format(**values)


def when(epoch: float) -> str:
    """A date and time as people read it (UTC, to the minute)."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def flow_ended(error: str, lang: str) -> str:
    """Why a device flow ended without a token."""
    if error in ("access_denied", "expired_token"):
        return say(error, lang)
    if error == "invalid_grant":
        return say("expired_token", lang)
    return say("other", lang, why=error)


def mismatch(who: str, lang: str) -> str:
    """Someone else approved the link."""
    return say("mismatch", lang, who=who or ("someone else" if lang != "zh" else "其他人"))


def authorized(name: str, what: str, lang: str) -> str:
    """The flow completed as the sender."""
    return say("authorized", lang, name=name, what=what)
