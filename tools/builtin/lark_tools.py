"""Lark CLI tools: calendar, chat history and message sending through the official lark-cli."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from larkbot.context import RequestContext
from tools.base import BaseTool, ContextTool, ToolResult
from tools.builtin._lark_cli import LarkCliError, cli_version, run_lark_cli
from tools.runtime import ToolRuntime

MAX_RANGE_DAYS = 40  # instance_view rejects longer ranges (error 193103)
SEND_FORMAT_SINCE = (
    1,
    0,
    46,
)  # `im +messages-send --format json` is older lark-cli's "unknown flag"


def to_unix(value: str, tz: ZoneInfo) -> int:
    """Parse unix seconds, an ISO date or an ISO datetime (naive = the configured zone)."""
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"cannot read time {value!r}: use ISO 8601 (2026-03-10 or 2026-03-10T09:00) "
            "or unix seconds"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return int(moment.timestamp())


def _moment(point: dict[str, Any] | None, tz: ZoneInfo) -> datetime | str:
    """The time in `tz` (lark-cli prints +agenda in ITS machine's zone), or the all-day date."""
    if not isinstance(point, dict):
        return "?"
    try:
        if point.get("datetime"):
            moment = datetime.fromisoformat(str(point["datetime"]).replace("Z", "+00:00"))
            return moment.astimezone(tz) if moment.tzinfo else moment.replace(tzinfo=tz)
        if point.get("timestamp"):
            return datetime.fromtimestamp(int(point["timestamp"]), UTC).astimezone(tz)
    except (TypeError, ValueError):
        return str(point.get("datetime") or point.get("timestamp"))
    return str(point.get("date", "?"))


def _offset(moment: datetime) -> str:
    raw = moment.strftime("%z")  # +0800
    return f"UTC{raw[:3]}:{raw[3:]}" if raw else "local time"


def _when(start: datetime | str, end: datetime | str) -> str:
    """`2026-11-30 09:00 – 09:15 (UTC+08:00)`; all-day events by their date."""
    if not isinstance(start, datetime):
        return f"{start} (all day)" if start != "?" else "?"
    until = f"{end:%H:%M}" if isinstance(end, datetime) else str(end)
    return f"{start:%Y-%m-%d %H:%M} – {until} ({_offset(start)})"


def format_events(data: Any, tz: ZoneInfo) -> str:
    """Agenda or instance_view JSON as one line per event."""
    inner = data.get("data", data) if isinstance(data, dict) else data
    items = inner.get("items", inner.get("events", [])) if isinstance(inner, dict) else inner
    lines = []
    for ev in items or []:
        if not isinstance(ev, dict) or ev.get("status") == "cancelled":
            continue
        start, end = _moment(ev.get("start_time"), tz), _moment(ev.get("end_time"), tz)
        line = f"- {_when(start, end)} " + str(ev.get("summary") or "(no title)")
        location = ev.get("location")
        if isinstance(location, dict) and location.get("name"):
            line += f" @ {location['name']}"
        lines.append(line)
    return "\n".join(lines) if lines else "No events in that range."


class LarkCalendarEventsTool(BaseTool):
    """lark_calendar_events: today's agenda or the events in a time range (as the user)."""

    name = "lark_calendar_events"
    description = (
        "Read the owner's Lark calendar. action=agenda: today's events; action=list with "
        "start_time/end_time (ISO 8601 or unix seconds): events in that range (max 40 days)."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["agenda", "list"], "default": "agenda"},
            "start_time": {"type": "string", "description": "range start, e.g. 2026-03-10"},
            "end_time": {"type": "string", "description": "range end, e.g. 2026-03-17"},
        },
    }
    private_data = True

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    async def run(self, **kw: Any) -> str | ToolResult:
        """Run `calendar +agenda` or `calendar events instance_view` and list the events."""
        settings = self.rt.settings
        tz = ZoneInfo(settings.scheduler.timezone)
        if kw.get("action", "agenda") == "agenda":  # today in scheduler.timezone, not the CLI's
            today = datetime.now(tz).replace(hour=0, minute=0, second=0, microsecond=0)
            span = [str(int(today.timestamp())), str(int((today + timedelta(days=1)).timestamp()))]
            args = ["calendar", "+agenda", "--start", span[0], "--end", span[1]]
            args += ["--as", "user", "--format", "json"]
        else:
            if not kw.get("start_time") or not kw.get("end_time"):
                return ToolResult("action=list needs start_time and end_time", is_error=True)
            try:
                start, end = to_unix(kw["start_time"], tz), to_unix(kw["end_time"], tz)
            except ValueError as err:
                return ToolResult(str(err), is_error=True)
            if not 0 < end - start <= MAX_RANGE_DAYS * 86400:
                return ToolResult("end_time must be after start_time, at most 40 days", True)
            params = {"calendar_id": "primary", "start_time": str(start), "end_time": str(end)}
            args = ["calendar", "events", "instance_view", "--params", json.dumps(params)]
            args += ["--as", "user"]
        try:
            data = await run_lark_cli(args, settings.tools.lark_cli)
        except LarkCliError as err:
            return ToolResult(str(err), is_error=True)
        return format_events(data, tz)


class LarkChatMessagesTool(BaseTool):
    """lark_chat_messages: a chat's recent history, read as the user (sees every message)."""

    name = "lark_chat_messages"
    description = (
        "Read recent messages of a Lark chat (oc_…) as the owner, newest first by default."
    )

    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "chat_id": {"type": "string", "description": "the chat's id, oc_…"},
            "start_time": {"type": "string", "description": "only messages after (ISO 8601)"},
            "end_time": {"type": "string", "description": "only messages before (ISO 8601)"},
            "page_size": {"type": "integer", "minimum": 1, "maximum": 50, "default": 20},
            "sort": {"type": "string", "enum": ["asc", "desc"], "default": "desc"},
        },
        "required": ["chat_id"],
    }
    private_data = True
    untrusted_output = True  # other people's messages
    untrusted_kind = "person"

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    async def run(self, **kw: Any) -> str | ToolResult:
        """Run `im +chat-messages-list --as user` and render one line per message."""
        settings = self.rt.settings
        args = ["im", "+chat-messages-list", "--chat-id", kw["chat_id"], "--as", "user"]
        args += ["--page-size", str(kw.get("page_size", 20)), "--sort", kw.get("sort", "desc")]
        for key, flag in (("start_time", "--start"), ("end_time", "--end")):
            if kw.get(key):
                args += [flag, kw[key]]
        args += ["--format", "json"]
        try:
            data = await run_lark_cli(args, settings.tools.lark_cli)
        except LarkCliError as err:
            return ToolResult(str(err), is_error=True)
        inner = data.get("data", data) if isinstance(data, dict) else {}
        lines = []
        for msg in inner.get("messages", []) if isinstance(inner, dict) else []:
            sender = (msg.get("sender") or {}).get("name") or (msg.get("sender") or {}).get("id")
            lines.append(f"[{msg.get('create_time', '?')}] {sender}: {msg.get('content', '')}")
        more = " (more available)" if isinstance(inner, dict) and inner.get("has_more") else ""
        return ("\n".join(lines) or "No messages.") + more


class LarkMessageSendTool(ContextTool):
    """lark_message_send: send a message to a chat or a user, as the bot or as the user."""

    name = "lark_message_send"
    description = (
        "Send a Lark message (markdown allowed) to exactly one of chat_id (oc_…) or user_id "
        "(ou_…). as_user=true sends as the owner instead of the bot. Returns the message_id."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 1},
            "chat_id": {"type": "string"},
            "user_id": {"type": "string"},
            "as_user": {"type": "boolean", "default": False},
        },
        "required": ["content"],
    }
    side_effect = True
    no_compress = True

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    def consent_check(self, **kw: Any) -> str | None:
        """Every send is asked: say who it goes to and what it says."""
        target = kw.get("chat_id") or kw.get("user_id") or "?"
        who = "as you" if kw.get("as_user") else "as the bot"
        return f"Send a Lark message {who} to {target}: {str(kw.get('content', ''))[:200]!r}"

    def consent_always(self, **kw: Any) -> bool:
        """Each message is its own decision: never remembered."""
        return True

    async def run_with(self, ctx: RequestContext, **kw: Any) -> str | ToolResult:
        """Run `im +messages-send` with an idempotency key; return the message_id."""
        chat_id, user_id = kw.get("chat_id"), kw.get("user_id")
        if bool(chat_id) == bool(user_id):
            return ToolResult("give exactly one of chat_id or user_id", is_error=True)
        seed = f"{ctx.session_id}|{ctx.message_id}|{chat_id or user_id}|{kw['content']}"
        key = hashlib.sha256(seed.encode()).hexdigest()[:32]
        args = ["im", "+messages-send"]
        args += ["--chat-id", chat_id] if chat_id else ["--user-id", str(user_id)]
        args += ["--markdown", kw["content"], "--idempotency-key", key]
        args += ["--as", "user" if kw.get("as_user") else "bot"]
        try:
            version = await cli_version(self.rt.settings.tools.lark_cli)
            if version is not None and version >= SEND_FORMAT_SINCE:
                args += ["--format", "json"]  # older ones print their JSON envelope anyway
            data = await run_lark_cli(args, self.rt.settings.tools.lark_cli)
        except LarkCliError as err:
            return ToolResult(str(err), is_error=True)
        inner = data.get("data", data) if isinstance(data, dict) else {}
        message_id = inner.get("message_id") if isinstance(inner, dict) else None
        if not message_id:
            return ToolResult(f"lark-cli answered without a message_id: {inner!r}"[:500], True)
        return f"sent: message_id={message_id}"


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The three Lark CLI tools (they explain themselves when lark-cli is missing)."""
    return [LarkCalendarEventsTool(rt), LarkChatMessagesTool(rt), LarkMessageSendTool(rt)]
