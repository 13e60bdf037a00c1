"""Images tools return (screenshots) shown to the model as image parts, when `llm.vision` allows.

Chat Completions accepts images only in user messages, so after a tool round that produced
images one user message carries them (`image_url` data URLs, inlined by
`content_parts.materialize` like the images users send). Only the newest round's images
stay in the turn: older ones are dropped before the next model call (a desktop session would
otherwise resend every screenshot), and none is ever saved in the history, which keeps the
tool results' text ("Screenshot attached").
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from larkbot.config import Settings
from larkbot.content_parts import local_image_part, materialize, text_of, text_part
from larkbot.providers.base import Message
from larkbot.providers.capabilities import sees_images
from tools.base import ToolResult

MARK = "(The images these tool results attached, for you to look at:"
MAX_IMAGES = 3  # per round
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # larger files are not inlined (providers cap ~20 MB a request)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


def vision_allowed(settings: Settings) -> bool:
    """`llm.vision`: true/false as set; auto: the provider's model table."""
    return sees_images(settings)


def _is_image_message(message: Message) -> bool:
    return message.get("role") == "user" and text_of(message.get("content")).startswith(MARK)


def _inlinable(path: Path) -> bool:
    """An image file small enough to send (content_parts inlines it as a data URL)."""
    try:
        return path.suffix.lower() in IMAGE_SUFFIXES and path.stat().st_size <= MAX_IMAGE_BYTES
    except OSError:
        return False


def image_message(results: Iterable[tuple[str, ToolResult]]) -> Message | None:
    """One user message with the round's images inlined (blocking: reads files), or None."""
    parts: list[dict[str, object]] = []
    names: list[str] = []
    for tool, result in results:
        for attachment in result.attachments:
            path = Path(attachment.path)
            if attachment.kind == "image" and len(names) < MAX_IMAGES and _inlinable(path):
                names.append(tool)
                parts.append(local_image_part(path))
    if not parts:
        return None
    text = f"{MARK} {', '.join(names)})"
    message: Message = {"role": "user", "content": [text_part(text), *parts]}
    (inlined,) = materialize([message], keep=len(parts), note="[an image that could not be read]")
    return inlined


def with_round_images(
    turn: list[Message], results: Iterable[tuple[str, ToolResult]], settings: Settings
) -> list[Message]:
    """The turn without older image messages, plus this round's images when vision is on."""
    kept = [m for m in turn if not _is_image_message(m)]
    if not vision_allowed(settings):
        return kept
    message = image_message(results)
    return [*kept, message] if message is not None else kept
