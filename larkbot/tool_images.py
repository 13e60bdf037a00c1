"""Images tools return (screenshots) shown to the model as image parts, when `llm.vision` allows.

Chat Completions accepts images only in user messages, so after a tool round that produced
images one user message carries them (`image_url` data URLs). Only the newest round's images
stay in the turn: older ones are dropped before the next model call (a desktop session would
otherwise resend every screenshot), and none is ever saved in the history, which keeps the
tool results' text ("Screenshot attached").
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path

from larkbot.config import Settings
from larkbot.content_parts import image_part, sees_images, text_part
from larkbot.providers.base import Message
from tools.base import ToolResult

MARK = "(The images these tool results attached, for you to look at:"
MAX_IMAGES = 3  # per round
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # larger files are not inlined (providers cap ~20 MB a request)
MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}


def vision_allowed(settings: Settings) -> bool:
    """`llm.vision`: true/false as set; auto: when the model is a known vision model."""
    return sees_images(settings.llm.model, settings.llm.vision)


def _is_image_message(message: Message) -> bool:
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list) or not content:
        return False
    first = content[0]
    return isinstance(first, dict) and str(first.get("text", "")).startswith(MARK)


def _data_url(path: Path) -> str | None:
    mime = MIME.get(path.suffix.lower())
    try:
        if mime is None or path.stat().st_size > MAX_IMAGE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_message(results: Iterable[tuple[str, ToolResult]]) -> Message | None:
    """One user message with the round's images (blocking: reads files), or None if none."""
    parts: list[dict[str, object]] = []
    names: list[str] = []
    for tool, result in results:
        for attachment in result.attachments:
            if attachment.kind != "image" or len(names) >= MAX_IMAGES:
                continue
            url = _data_url(Path(attachment.path))
            if url is not None:
                names.append(tool)
                parts.append(image_part(url))
    if not parts:
        return None
    text = f"{MARK} {', '.join(names)})"
    return {"role": "user", "content": [text_part(text), *parts]}


def with_round_images(
    turn: list[Message], results: Iterable[tuple[str, ToolResult]], settings: Settings
) -> list[Message]:
    """The turn without older image messages, plus this round's images when vision is on."""
    kept = [m for m in turn if not _is_image_message(m)]
    if not vision_allowed(settings):
        return kept
    message = image_message(results)
    return [*kept, message] if message is not None else kept
