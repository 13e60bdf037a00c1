"""Lark `im.message.receive_v1` events → a small, frozen domain object the service works with."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from larkbot.lark.api.client import as_object
from larkbot.lark.arrival.content import describe, parse_content

MESSAGE_EVENT = "im.message.receive_v1"
_PLACEHOLDER = re.compile(r"@_user_\d+( ?)")
_AT_ALL = re.compile(r"@_all(?![A-Za-z0-9_])")


@dataclass(frozen=True)
class InboundMessage:
    """One user message as the agent service sees it (no Lark JSON leaks past this)."""

    message_id: str
    chat_id: str
    chat_type: str  # "p2p" | "group"
    sender_open_id: str
    text: str
    message_type: str = "text"
    sender_type: str = "user"
    thread_id: str = ""
    root_id: str = ""
    parent_id: str = ""
    mentions_bot: bool = False
    mentioned_all: bool = False
    mentions: tuple[str, ...] = ()  # display names of other people mentioned
    create_time: str = ""
    event_id: str = ""
    content: str = ""  # the message's content JSON (image/file keys, post elements)
    # False: it came unsigned (webhook without lark.encrypt_key), so nobody can tell a fresh
    # event from a replayed or forged one, and it gets no owner powers (no side effects)
    signed: bool = True

    @property
    def is_dm(self) -> bool:
        """True for a one-to-one chat with the bot."""
        return self.chat_type == "p2p"

    def to_json(self) -> str:
        """Serialise for the inbound journal (crash recovery re-runs from this)."""
        return _to_json(asdict(self))

    @classmethod
    def from_json(cls, data: str) -> InboundMessage:
        """Inverse of `to_json`; unknown keys are ignored so old journal rows still load."""
        raw = json.loads(data)
        kwargs = {k: v for k, v in raw.items() if k in _FIELD_SET}
        kwargs["mentions"] = tuple(kwargs.get("mentions") or ())
        return cls(**kwargs)


_FIELD_SET = frozenset(f.name for f in fields(InboundMessage))


def _to_json(value: Any) -> str:
    """Compact JSON, non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _scrub(text: str) -> str:
    """Lone surrogates (valid JSON escapes, invalid UTF-8) become "?": they broke every write."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _str(value: Any) -> str:
    return _scrub(value) if isinstance(value, str) else ""


def _is_all(m: dict[str, Any]) -> bool:
    return m.get("key") == "@_all" or as_object(m.get("id")).get("user_id") == "all"


class _Mentions:
    """Index of a message's `mentions` array; resolves placeholders to names."""

    def __init__(self, raw: Any, bot_open_id: str) -> None:
        self.by_key: dict[str, dict[str, Any]] = {}
        self.by_open_id: dict[str, dict[str, Any]] = {}
        self.bot_open_id = bot_open_id
        self.mentions_bot = False
        self.mentioned_all = False
        self.others: list[str] = []
        for m in raw if isinstance(raw, list) else []:
            if not isinstance(m, dict):
                continue
            if _is_all(m):
                self.mentioned_all = True
                continue
            open_id = _str(as_object(m.get("id")).get("open_id"))
            if _str(m.get("key")):
                self.by_key[m["key"]] = m
            if open_id:
                self.by_open_id[open_id] = m
            if bot_open_id and open_id == bot_open_id:
                self.mentions_bot = True
            else:
                self.others.append(_str(m.get("name")) or open_id)

    def resolve(self, ref: str) -> str:
        """`@Name` for a placeholder or open_id; "" for this bot's own mention."""
        m = self.by_key.get(ref) or self.by_open_id.get(ref)
        if m is None:
            return ref
        open_id = _str(as_object(m.get("id")).get("open_id"))
        if self.bot_open_id and open_id == self.bot_open_id:
            return ""
        return f"@{_str(m.get('name')) or open_id or ref}"


def _clean(text: str, mentions: _Mentions) -> str:
    if "@" not in text:  # no placeholder and no @_all: most messages in a DM
        return text.strip()

    def sub(m: re.Match[str]) -> str:
        shown = mentions.resolve(m.group(0).rstrip())
        return shown + m.group(1) if shown else ""  # the bot's mention goes with its space

    return _AT_ALL.sub("@all", _PLACEHOLDER.sub(sub, text)).strip()


def normalize(envelope: Any, bot_open_id: str) -> InboundMessage | None:
    """The message in a schema-2.0 receive event, or None (other events, bots, malformed)."""
    if not isinstance(envelope, dict):
        return None
    header = as_object(envelope.get("header"))
    if header.get("event_type") != MESSAGE_EVENT:
        return None
    event = as_object(envelope.get("event"))
    sender, message = as_object(event.get("sender")), as_object(event.get("message"))
    sender_open_id = _str(as_object(sender.get("sender_id")).get("open_id"))
    sender_type = _str(sender.get("sender_type")) or "user"
    message_id, chat_id = _str(message.get("message_id")), _str(message.get("chat_id"))
    if not message_id or not chat_id or not sender_open_id:
        return None
    if sender_type != "user" or (bot_open_id and sender_open_id == bot_open_id):
        return None  # bots, including this one, never start a turn
    message_type = _str(message.get("message_type")) or "text"
    content = parse_content(message.get("content"))
    mentions = _Mentions(message.get("mentions"), bot_open_id)
    raw_text = describe(message_type, content, mentions.resolve)
    mentioned_all = mentions.mentioned_all or ("@" in raw_text and bool(_AT_ALL.search(raw_text)))
    return InboundMessage(
        message_id=message_id,
        chat_id=chat_id,
        chat_type=_str(message.get("chat_type")),  # unknown: group rules, never a DM
        sender_open_id=sender_open_id,
        sender_type=sender_type,
        text=_scrub(_clean(raw_text, mentions)),
        message_type=message_type,
        thread_id=_str(message.get("thread_id")),
        root_id=_str(message.get("root_id")),
        parent_id=_str(message.get("parent_id")),
        mentions_bot=mentions.mentions_bot,
        mentioned_all=mentioned_all,
        mentions=tuple(_scrub(name) for name in mentions.others),
        create_time=_str(message.get("create_time")),
        event_id=_str(header.get("event_id")),
        content=_scrub(_to_json(content)) if content else "",
        signed=True,
    )
