"""The system prompt: who the bot is, the date, the channel, and the user's language."""

from __future__ import annotations

import re
from datetime import datetime

from larkbot.config import Settings
from larkbot.context import RequestContext
from larkbot.skill_store import skills_prompt

_SCRIPTS: list[tuple[str, re.Pattern[str]]] = [
    ("Japanese", re.compile(r"[\u3040-\u30ff]")),
    ("Korean", re.compile(r"[\uac00-\ud7af]")),
    ("Chinese", re.compile(r"[\u4e00-\u9fff]")),
    ("Russian", re.compile(r"[\u0400-\u04ff]")),
    ("Arabic", re.compile(r"[\u0600-\u06ff]")),
]


def detect_language(text: str) -> str | None:
    """A guess at the script's language (Chinese, Japanese, …); None for Latin-script text."""
    for name, pattern in _SCRIPTS:
        if pattern.search(text):
            return name
    return None


def _now(settings: Settings) -> datetime:
    tz = settings.scheduler.zone()
    return datetime.now(tz) if tz else datetime.now().astimezone()  # no zone named: the host's


def describe_channel(ctx: RequestContext) -> str:
    """The channel in words, for the model."""
    if ctx.interface == "lark":
        where = "a group chat" if ctx.chat_type == "group" else "a direct (p2p) chat"
        who = f" with {ctx.sender_name}" if ctx.sender_name else ""
        owner = "the bot's owner" if ctx.is_owner else "not the owner (no side-effect tools)"
        people = (
            " Several people write here: each user message starts with its sender in brackets "
            "([name], '· owner' marks an owner of the bot); keep people and what each said apart."
            if ctx.chat_type == "group"
            else ""
        )
        return f"Lark/Feishu, {where}{who}; the sender is {owner}. Lark renders Markdown.{people}"
    if ctx.interface == "web":
        return "the web interface"
    return "a terminal chat (`larkbot chat`) with the owner"


def language_rule(user_input: str) -> str:
    """The instruction to answer in the user's language."""
    lang = detect_language(user_input)
    hint = f" (it looks like {lang})" if lang else ""
    return f"Answer in the language of the user's latest message{hint}."


def build_system_prompt(
    settings: Settings, ctx: RequestContext, user_input: str, *, fast: bool = False
) -> str:
    """The full prompt, or the short fast-path one (few tools, find_tools for the rest)."""
    now = _now(settings)
    lines = [
        "You are larkbot, a personal assistant running on its owner's machine.",
        f"Now: {now:%Y-%m-%d %H:%M} ({now:%A}), timezone {now.tzname() or 'local'}.",
        f"Channel: {describe_channel(ctx)}",
        language_rule(user_input),
    ]
    if fast:
        lines.append(
            "Only a few tools are shown. For anything else (web search, file search, "
            "schedules, knowledge base, Lark, cards, …) call find_tools with a few words; "
            "the tools it finds become available."
        )
    else:
        lines += [
            "Use tools when they help; call independent tools in the same turn.",
            "A tool result starting with 'Error:' says what went wrong: adapt, do not repeat "
            "the same call. When the user declines or a call is refused, say so and stop trying.",
            "Be concise.",
        ]
    skills = skills_prompt(settings.home, settings.tools.disabled, user_input, fast=fast)
    if skills:  # names and descriptions only; bodies come through skill_read
        lines.append(skills)
    if settings.agent.system_prompt_extra:
        lines.append(settings.agent.system_prompt_extra)
    return "\n".join(lines)
