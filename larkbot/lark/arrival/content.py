"""Message `content` JSON of each Lark message type → text the model can read."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from larkbot.lark.api.client import as_object

# Resolves a mention reference (placeholder key or open_id) to display text; "" drops it.
MentionResolver = Callable[[str], str]


def parse_content(raw: Any) -> dict[str, Any]:
    """The decoded `content` JSON string; an empty dict when it is not a JSON object."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return as_object(value)


def _styled(text: str, styles: Any) -> str:
    styles = styles if isinstance(styles, list) else []
    core = text.strip()
    if not core:
        return text
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    text = core
    if "code" in styles:
        text = f"`{text}`"
    if "bold" in styles:
        text = f"**{text}**"
    if "italic" in styles:
        text = f"*{text}*"
    if "lineThrough" in styles or "strikethrough" in styles:
        text = f"~~{text}~~"
    return lead + text + trail


def _post_element(el: dict[str, Any], resolve: MentionResolver) -> str:
    tag = el.get("tag")
    text = str(el.get("text") or "")
    if tag == "text":
        return _styled(text, el.get("style"))
    if tag == "a":
        return f"[{text or el.get('href') or ''}]({el.get('href') or ''})"
    if tag == "at":
        ref = str(el.get("user_id") or el.get("open_id") or "")
        if ref in ("all", "@_all"):
            return "@_all"  # Lark's own token, as in text: normalize detects and renders it
        shown = resolve(ref)  # "" for this bot's own mention, `ref` itself when unknown
        return f"@{el.get('user_name') or ref}" if shown == ref else shown
    if tag == "img":
        return f"[image {el.get('image_key') or ''}]"
    if tag == "media":
        return f"[video {el.get('file_key') or ''}]"
    if tag == "emotion":
        return f":{el.get('emoji_type') or ''}:"
    if tag == "code_block":
        return f"```{str(el.get('language') or '').lower()}\n{text}\n```"
    if tag == "hr":
        return "---"
    return text


def post_to_markdown(content: dict[str, Any], resolve: MentionResolver) -> str:
    """Rich text (`post`) → markdown; tolerates both the flat and the locale-wrapped form."""
    doc = content
    if "content" not in doc:  # the locale-wrapped form: {"zh_cn": {...}}
        doc = next((v for v in content.values() if isinstance(v, dict)), {})
    lines: list[str] = []
    if doc.get("title"):
        lines.append(f"# {doc['title']}")
    paragraphs = doc.get("content")
    for para in paragraphs if isinstance(paragraphs, list) else []:
        if not isinstance(para, list):
            continue
        line = "".join(_post_element(el, resolve) for el in para if isinstance(el, dict))
        if line.strip():
            lines.append(line.strip())
    return "\n\n".join(lines)


def post_image_keys(content: dict[str, Any]) -> list[str]:
    """The image_keys of the `img` elements of a rich-text post, in order."""
    doc = (
        content
        if "content" in content
        else next((v for v in content.values() if isinstance(v, dict)), {})
    )
    keys: list[str] = []
    paragraphs = doc.get("content")
    for para in paragraphs if isinstance(paragraphs, list) else []:
        for el in para if isinstance(para, list) else []:
            if isinstance(el, dict) and el.get("tag") == "img" and el.get("image_key"):
                keys.append(str(el["image_key"]))
    return keys


def card_to_text(card: dict[str, Any]) -> str:
    """The readable text leaves of an interactive card (Lark sends a simplified rendering)."""
    out: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("title", "content", "text"):
                if isinstance(node.get(key), str) and node[key].strip():
                    out.append(node[key].strip())
            for value in node.values():
                if isinstance(value, dict | list):
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                if isinstance(item, str) and item.strip():
                    out.append(item.strip())
                else:
                    visit(item)

    visit(card)
    deduped = [s for i, s in enumerate(out) if i == 0 or out[i - 1] != s]
    return "\n".join(deduped)[:4000]


def _seconds(ms: Any) -> str:
    try:
        return f"{int(ms) / 1000:.0f} s"
    except (TypeError, ValueError):
        return "unknown length"


def describe(message_type: str, c: dict[str, Any], resolve: MentionResolver) -> str:
    """What the user sent, as text; non-text types are described so the model knows."""
    if message_type == "text":
        return str(c.get("text") or "")
    if message_type == "post":
        return post_to_markdown(c, resolve)
    if message_type == "image":
        return f"[The user sent an image (image_key {c.get('image_key', '?')}); you cannot see it.]"
    if message_type == "file":
        name, key = c.get("file_name", "unnamed"), c.get("file_key", "?")
        return f"[The user sent a file: {name} (file_key {key}).]"
    if message_type == "audio":
        return (
            f"[The user sent a voice message ({_seconds(c.get('duration'))}); you cannot hear it.]"
        )
    if message_type == "media":
        name = c.get("file_name") or "video"
        return (
            f"[The user sent a video: {name} ({_seconds(c.get('duration'))}); you cannot watch it.]"
        )
    if message_type == "sticker":
        return "[The user sent a sticker.]"
    if message_type == "merge_forward":
        return "[The user forwarded a merged chat history; its messages are not included.]"
    if message_type == "interactive":
        return f"[The user shared a card:]\n{card_to_text(c)}"
    if message_type == "share_chat":
        return f"[The user shared a group chat card (chat_id {c.get('chat_id', '?')}).]"
    if message_type == "share_user":
        return f"[The user shared a contact card (user_id {c.get('user_id', '?')}).]"
    if message_type == "location":
        where = f"{c.get('latitude', '?')}, {c.get('longitude', '?')}"
        return f"[The user shared a location: {c.get('name', '')} ({where}).]"
    summary = json.dumps(c, ensure_ascii=False)[:500] if c else ""
    return (
        f"[The user sent a {message_type or 'unknown'} message{': ' + summary if summary else ''}.]"
    )
