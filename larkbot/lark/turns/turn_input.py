"""What the model sees for one Lark message: who said it, its text, images, files, quote, forwards.

- In groups every message starts with its sender, `[Bob · owner] …`, so a shared history keeps
  people apart (names from `people.py`).
- Images (image messages, images in posts, in the quoted message) are downloaded, downscaled
  and attached as image parts when the model sees images; otherwise the model is told plainly
  that an image came and that it cannot see it.
- Files are saved in the inbox; the text of common documents follows inline up to a budget,
  the whole text in a `.txt` next to the file. Documents and images are read in a
  memory-capped child process (`sandbox.py`); one too big to read gets a note saying so.
  The sender may read what they sent (those paths go into the turn's
  `RequestContext.uploads`; `larkbot.policy` decides).
  Audio is transcribed when `llm.transcription_model` is set; video is saved, not watched.
- A reply brings its quoted message (one level); a merge-forward is expanded into its
  messages with senders and times. Everything is bounded; lookups that fail leave a note.
- Text no owner wrote is marked (`RequestContext.input_sources`, `policy/provenance.py`): a
  quoted message of someone else, a forward holding others' messages, a document's text, an
  image the model sees (its origin is unknown).
  While it is in the conversation, side effects need the owner's approval naming it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from larkbot.config import Settings
from larkbot.content_parts import Content, local_image_part, text_part
from larkbot.context import RequestContext
from larkbot.lark.api.client import LarkClient
from larkbot.lark.arrival.content import describe, parse_content, post_image_keys
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.media.extract import ExtractError, can_extract, is_plain_text
from larkbot.lark.media.isolated import Sandbox
from larkbot.lark.media.media_in import Inbox, MediaError
from larkbot.lark.media.transcribe import transcribe
from larkbot.lark.turns.people import Directory
from larkbot.logs import get_logger
from larkbot.providers.capabilities import sees_images
from larkbot.sources import Kind, Source
from tools.attachments import human_size

log = get_logger("larkbot.lark.turns.turn_input")
FILE_TEXT_CHARS = 20_000
FULL_TEXT_CHARS = 2_000_000  # the rest of a long document goes to a .txt the model can read
MAX_IMAGES = 6  # per message
MAX_QUOTE = 2000
MAX_FORWARDED = 30
MAX_FORWARD_ITEM = 1000
LOOKUP_TIMEOUT = 5.0
FULL_TEXT_SECONDS = 10.0  # reading a long document's rest stops here (what was read is kept)
NOT_SEEN = (
    "You cannot see images with the current model: say so plainly, never guess what it shows."
)


class _Out:
    """Lines of text and image files collected for one turn."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.images: list[Path] = []
        self.uploads: list[Path] = []  # files the sender sent themselves (they may read them)
        self.sources: list[Source] = []  # parts no owner wrote (quotes, forwards, documents)


class TurnInputs:
    """Builds the model's input for a Lark message (text, or text and image parts)."""

    def __init__(
        self,
        client: LarkClient,
        directory: Directory,
        settings: Callable[[], Settings],
        http: httpx.AsyncClient | None = None,  # the shared client, for audio transcription
    ) -> None:
        self.client = client
        self.directory = directory
        self.settings = settings
        self.http = http
        self.sandbox = Sandbox()

    async def build(
        self, msg: InboundMessage, ctx: RequestContext
    ) -> tuple[Content, RequestContext]:
        """The content the model gets for `msg`, and `ctx` with the sender's uploads in it."""
        s = self.settings()
        out = _Out()
        who = ctx.sender_name if msg.chat_type == "group" and ctx.sender_name else "The user"
        if msg.parent_id and self.client is not None:
            await self._quote(msg, s, out)
        if msg.message_type == "merge_forward" and self.client is not None:
            await self._forwards(msg, who, s, out)
        else:
            content = parse_content(msg.content)
            if msg.message_type in ("text", "post") or not self.client:
                out.lines.append(msg.text)
            if self.client is not None:
                await self._resources(
                    msg.chat_id, msg.message_id, msg.message_type, content, who, s, out, True
                )
        text = "\n".join(line for line in out.lines if line)
        if msg.chat_type == "group":
            text = f"[{who}{' · owner' if ctx.is_owner else ''}] {text}"
        ctx = ctx.with_uploads(*(str(p.resolve()) for p in out.uploads))
        ctx = ctx.with_input_sources(*out.sources)
        if not out.images:
            return text, ctx
        return [text_part(text), *(local_image_part(p) for p in out.images)], ctx

    async def _lookup(self, message_id: str) -> list[dict[str, Any]]:
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT):
                items: list[dict[str, Any]] = await self.client.get_message_items(message_id)
                return items
        except asyncio.CancelledError:
            raise
        except Exception as err:  # context is a nicety: the turn goes on without it
            log.info("lark_lookup_failed", message_id=message_id, error=type(err).__name__)
            return []

    async def _sender(self, item: dict[str, Any]) -> str:
        sender = item.get("sender") if isinstance(item.get("sender"), dict) else {}
        if (sender or {}).get("sender_type") == "app":
            return "you (the bot)"
        return await self.directory.name(str((sender or {}).get("id") or ""))

    async def _quote(self, msg: InboundMessage, s: Settings, out: _Out) -> None:
        items = await self._lookup(msg.parent_id)
        if not items:
            out.lines.append("[In reply to a message that could not be fetched]")
            return
        parent = items[0]
        if parent.get("deleted"):
            out.lines.append("[In reply to a message that was recalled]")
            return
        name = await self._sender(parent)
        msg_type, content = _body(parent)
        quoted = describe(msg_type, content, lambda ref: ref)[:MAX_QUOTE]
        out.lines.append(f"[In reply to {name}: {quoted}]")
        own = _sender_id(parent) == msg.sender_open_id  # replying to their own file
        if not own and not _from_bot(parent):
            who = f"{name} ({_sender_id(parent) or 'unknown'})"
            out.sources.append(Source(Kind.PERSON, f"the message by {who} you replied to"))
        await self._resources(msg.chat_id, msg.parent_id, msg_type, content, name, s, out, own)

    async def _forwards(self, msg: InboundMessage, who: str, s: Settings, out: _Out) -> None:
        items = [
            i for i in await self._lookup(msg.message_id) if i.get("message_id") != msg.message_id
        ]
        if not items:
            out.lines.append(f"[{who} forwarded a chat history that could not be fetched]")
            return
        lines = [f"[{who} forwarded {len(items)} messages:]"]
        others = {
            await self._sender(i)
            for i in items
            if _sender_id(i) != msg.sender_open_id and not _from_bot(i)
        }
        if others:
            names = ", ".join(sorted(others)[:5]) + (", …" if len(others) > 5 else "")
            out.sources.append(Source(Kind.PERSON, f"a forwarded chat history (by {names})"))
        for item in items[:MAX_FORWARDED]:
            when = _when(item.get("create_time"), s.scheduler.timezone)
            lines.append(f"- {when}{await self._sender(item)}: {_forwarded_text(item)}")
        if len(items) > MAX_FORWARDED:
            lines.append(f"(and {len(items) - MAX_FORWARDED} more)")
        out.lines.append("\n".join(lines))

    async def _resources(
        self,
        chat_id: str,
        message_id: str,
        msg_type: str,
        content: dict[str, Any],
        who: str,
        s: Settings,
        out: _Out,
        own: bool,
    ) -> None:
        inbox = Inbox(self.client, s.home / "inbox", s.lark.max_download_bytes)
        keys = [str(content.get("image_key") or "")] if msg_type == "image" else []
        keys += post_image_keys(content) if msg_type == "post" else []
        for key in [k for k in keys if k][:MAX_IMAGES]:
            await self._image(inbox, chat_id, message_id, key, who, s, out, own)
        if msg_type in ("file", "audio", "media") and content.get("file_key"):
            await self._file(inbox, chat_id, message_id, msg_type, content, who, s, out, own)

    async def _image(
        self,
        inbox: Inbox,
        chat_id: str,
        message_id: str,
        key: str,
        who: str,
        s: Settings,
        out: _Out,
        own: bool,
    ) -> None:
        try:
            raw = await inbox.fetch(chat_id, message_id, key, "image", key)
            image = await self.sandbox.image(raw, raw)
        except MediaError as err:
            out.lines.append(f"[{who} sent an image that could not be used: {err}.]")
            return
        if own:
            out.uploads += [raw, image]
        if sees_images(s):
            out.images.append(image)
            out.lines.append(f"[{who} sent an image (attached; saved at {image}).]")
            # whatever text it shows, nobody knows who wrote it (a screenshot of anything)
            by = "" if who == "The user" else f" by {who}"
            out.sources.append(Source(Kind.FILE, f"an image sent in this chat{by}"))
        else:
            out.lines.append(f"[{who} sent an image (saved at {image}). {NOT_SEEN}]")

    async def _file(
        self,
        inbox: Inbox,
        chat_id: str,
        message_id: str,
        msg_type: str,
        content: dict[str, Any],
        who: str,
        s: Settings,
        out: _Out,
        own: bool,
    ) -> None:
        what = {"audio": "a voice message", "media": "a video"}.get(msg_type, "a file")
        name = str(
            content.get("file_name") or ("voice.opus" if msg_type == "audio" else "video.mp4")
        )
        try:
            path = await inbox.fetch(chat_id, message_id, str(content["file_key"]), "file", name)
        except MediaError as err:
            out.lines.append(f"[{who} sent {what} ({name}), but {err}.]")
            return
        if own:
            out.uploads.append(path)
        size = human_size(path.stat().st_size)
        head = f"[{who} sent {what}: {path.name} ({size}), saved at {path}"
        if msg_type == "audio":
            out.lines.append(await self._audio(head, path, s))
        elif msg_type == "media":
            out.lines.append(f"{head}. You cannot watch videos.]")
        elif can_extract(path.name):
            text, whole, read = await _document(self.sandbox, head, path)
            out.lines.append(text)
            if read:  # whoever wrote the document, it was not the owner typing to the bot
                by = "" if who == "The user" else f" by {who}"
                label = f"the document {path.name} sent in this chat{by}"
                out.sources.append(Source(Kind.DOCUMENT, label))
            if own and whole is not None:
                out.uploads.append(whole)
        else:
            out.lines.append(f"{head}; its type is not read as text.]")

    async def _audio(self, head: str, path: Path, s: Settings) -> str:
        if not s.llm.transcription_model or self.http is None:
            return f"{head}. You cannot hear it (no llm.transcription_model is set).]"
        try:
            heard = await transcribe(self.http, s.llm, path)
        except Exception as err:
            log.warning("transcription_failed", error=f"{type(err).__name__}: {err}")
            return f"{head}. It could not be transcribed.]"
        return f"{head}. Transcript:]\n{heard}"


async def _document(sandbox: Sandbox, head: str, path: Path) -> tuple[str, Path | None, bool]:
    """The note with the document's text, the .txt holding all of it when it is long, and
    whether any of its text is in the note."""
    try:
        text = await sandbox.extract(path, FULL_TEXT_CHARS, FULL_TEXT_SECONDS)
    except ExtractError as err:  # too big, too slow, corrupt: the reason, for the sender
        return f"{head}; its text could not be read: {err}.]", None, False
    if not text:
        return f"{head}; it contains no text.]", None, False
    if len(text) <= FILE_TEXT_CHARS:
        return f"{head}. Its text:]\n{text}\n[end of {path.name}]", None, True
    whole = path if is_plain_text(path.name) else path.with_name(f"{path.name}.txt")
    if whole != path:
        await asyncio.to_thread(whole.write_text, text, "utf-8")
    more = (
        f" (first {FILE_TEXT_CHARS:,} of {len(text):,} characters; all of it is in {whole}, "
        "readable with file_read and max_lines)"
    )
    return f"{head}. Its text{more}:]\n{text[:FILE_TEXT_CHARS]}\n[…]", whole, True


def _sender_id(item: dict[str, Any]) -> str:
    sender = item.get("sender") if isinstance(item.get("sender"), dict) else {}
    return str((sender or {}).get("id") or "")


def _from_bot(item: dict[str, Any]) -> bool:
    sender = item.get("sender") if isinstance(item.get("sender"), dict) else {}
    return (sender or {}).get("sender_type") == "app"


def _body(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    body = item.get("body") if isinstance(item.get("body"), dict) else {}
    return str(item.get("msg_type") or "text"), parse_content((body or {}).get("content"))


def _forwarded_text(item: dict[str, Any]) -> str:
    msg_type, content = _body(item)
    if msg_type == "image":
        return "[an image; images inside a forwarded history cannot be fetched]"
    if msg_type in ("file", "media", "audio"):
        name = content.get("file_name") or msg_type
        return f"[{name}; files inside a forwarded history cannot be fetched]"
    return describe(msg_type, content, lambda ref: ref).strip()[:MAX_FORWARD_ITEM]


def _when(ms: Any, timezone: str) -> str:
    try:
        at = datetime.fromtimestamp(int(ms) / 1000, ZoneInfo(timezone))
    except (TypeError, ValueError, KeyError, OSError):
        return ""
    return f"{at:%Y-%m-%d %H:%M} "
