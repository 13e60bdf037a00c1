"""User message content as OpenAI content parts: text plus images, and the history's image budget.

A user message's `content` is a string, or a list of parts:
`{"type": "text", "text": …}` and `{"type": "image_url", "image_url": {"url": …}}`.
Images the bot received are stored as files (`$LARKBOT_HOME/inbox/…`) and referenced in the
history by a `larkbot-file://<path>` URL, so history rows stay small. `materialize` turns the
newest `MAX_HISTORY_IMAGES` of them into `data:` URLs right before the model call; older ones
(and all of them for a model that cannot see images) become a one-line note.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any

Content = str | list[dict[str, Any]]
MAX_HISTORY_IMAGES = 4
IMAGE_PART_CHARS = 1000  # what an image counts for against the history's character budget
LOCAL = "larkbot-file://"


def local_image_part(path: str | Path) -> dict[str, Any]:
    """An image part referring to a local file (resolved by `materialize`)."""
    return image_part(LOCAL + str(path))


def text_part(text: str) -> dict[str, Any]:
    """A text part."""
    return {"type": "text", "text": text}


def image_part(data_url: str) -> dict[str, Any]:
    """An image part (`data:image/…;base64,…` or an https URL)."""
    return {"type": "image_url", "image_url": {"url": data_url}}


def text_of(content: Any) -> str:
    """The text of a message's content (string or parts); images are left out."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def image_count(content: Any) -> int:
    """How many image parts a content holds."""
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")


def _url(part: dict[str, Any]) -> str:
    image = part.get("image_url")
    return str(image.get("url", "")) if isinstance(image, dict) else ""


def _data_url(path: Path) -> str | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    mime = mimetypes.guess_type(path.name)[0] or "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(raw).decode()}"


def _resolve(content: list[dict[str, Any]], budget: list[int], note: str) -> Content:
    """Parts with local images inlined while `budget[0]` lasts, the rest as notes."""
    parts: list[dict[str, Any]] = []
    for p in content:
        if p.get("type") != "image_url":
            parts.append(p)
            continue
        url = _url(p)
        data = None
        if budget[0] > 0:
            data = _data_url(Path(url[len(LOCAL) :])) if url.startswith(LOCAL) else url
        if data:
            budget[0] -= 1
            parts.append(image_part(data))
        else:
            parts.append(text_part(note))
    if all(p.get("type") == "text" for p in parts):
        return "\n".join(str(p.get("text", "")) for p in parts)
    return parts


def materialize(
    messages: list[dict[str, Any]], keep: int, note: str = "[an earlier image, no longer shown]"
) -> list[dict[str, Any]]:
    """Messages ready for the model: the newest `keep` images inlined, older ones as `note`.

    Blocking (reads the image files): run it in a thread.
    """
    budget = [keep]
    out: list[dict[str, Any]] = []
    for message in reversed(messages):
        content = message.get("content")
        if image_count(content):
            message = {**message, "content": _resolve(content, budget, note)}
        out.append(message)
    out.reverse()
    return out
