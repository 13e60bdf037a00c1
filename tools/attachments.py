"""What a file for the user may be, and the seam through which a channel posts one right away.

The limits are Lark's (the strictest channel): images inline up to 10 MB, files up to 30 MB.
A tool checks them before anything is read; a channel that can post a file into the caller's
conversation during the turn (so the tool learns whether it arrived) implements `FilePoster`
and the composition root hands it in as `ToolRuntime.posters[interface]`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from larkbot.errors import LarkBotError
from tools.base import Attachment

if TYPE_CHECKING:
    from larkbot.context import RequestContext

IMAGE_MAX_BYTES = 10 * 1024 * 1024  # Lark: "图片大小不得超过10M"
FILE_MAX_BYTES = 30 * 1024 * 1024  # Lark: files up to 30 MB
IMAGE_SUFFIXES = frozenset(
    {".jpg", ".jpeg", ".png", ".webp", ".gif", ".tif", ".tiff", ".bmp", ".ico"}
)


class AttachmentError(LarkBotError):
    """An attachment could not be delivered; the message says why, in words for the user."""


class FilePoster(Protocol):
    """Posts a file into the conversation a request came from, now (a channel implements it)."""

    async def post_file(self, ctx: RequestContext, attachment: Attachment, key: str) -> None:
        """Deliver `attachment`; the same `key` posts once. Raises AttachmentError."""
        ...


def human_size(n: int) -> str:
    """1536 → '1.5 KB'."""
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def kind_for(path: str | Path) -> str:
    """ "image" for the image formats Lark shows inline, else "file"."""
    return "image" if Path(path).suffix.lower() in IMAGE_SUFFIXES else "file"


def checked_size(path: Path) -> int:
    """The file's size, or AttachmentError when it cannot go to Lark at all (blocking: stat)."""
    if not path.exists():
        raise AttachmentError(f"{path} does not exist")
    if not path.is_file():
        raise AttachmentError(f"{path} is not a regular file")
    size = path.stat().st_size
    if size == 0:
        raise AttachmentError(f"{path.name} is empty; Lark does not accept empty files")
    if size > FILE_MAX_BYTES:
        raise AttachmentError(
            f"{path.name} is {human_size(size)}, over Lark's {human_size(FILE_MAX_BYTES)} "
            "limit for files"
        )
    return size
