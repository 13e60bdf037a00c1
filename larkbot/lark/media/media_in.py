"""Images, files, audio and video users send: downloaded (capped) into the inbox, prepared.

Resources come from the message resource API (`GET /im/v1/messages/:id/resources/:key
?type=image|file`; the image API only serves the bot's own uploads) into
`$LARKBOT_HOME/inbox/<chat>/<message_id>/<original name>`, at most `lark.max_download_bytes`.
Images are checked and downscaled (`larkbot.lark.media.images`) before the model sees them. Every
failure is a `MediaError` whose message can be shown to the model as is.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from larkbot.lark.api.binary import TooLarge
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.media.images import MediaError, prepare_image
from larkbot.logs import get_logger
from tools.attachments import human_size

__all__ = ["Inbox", "MediaError", "prepare_image", "safe_name"]
log = get_logger("larkbot.lark.media.media_in")
DOWNLOAD_TIMEOUT = 60.0
_UNSAFE = re.compile(r"[^\w.\-() \u4e00-\u9fff]+")
_ID = re.compile(r"[^A-Za-z0-9_\-]+")
NO_SCOPE = frozenset({99991672, 99991676, 99991679})


def safe_name(name: str, fallback: str) -> str:
    """A file name that stays inside its directory (no separators, no dot-files, bounded)."""
    base = _UNSAFE.sub("_", Path(name.replace("\\", "/")).name).strip(" ._")
    return (base or fallback)[:120]


class Inbox:
    """Downloads a message's resources into `$LARKBOT_HOME/inbox/…` through one LarkClient."""

    def __init__(self, client: Any, root: Path, max_bytes: int) -> None:
        self.client = client
        self.root = root
        self.max_bytes = max_bytes

    def folder(self, chat_id: str, message_id: str) -> Path:
        """The message's inbox folder (ids reduced to safe characters)."""
        return self.root / (_ID.sub("_", chat_id) or "chat") / (_ID.sub("_", message_id) or "msg")

    async def fetch(self, chat_id: str, message_id: str, key: str, kind: str, name: str) -> Path:
        """Download one resource to the inbox; returns its path. MediaError with the reason."""
        try:
            async with asyncio.timeout(DOWNLOAD_TIMEOUT):
                got = await self.client.download_resource(message_id, key, kind, self.max_bytes)
        except TooLarge as err:
            raise MediaError(
                f"it is larger than the {human_size(self.max_bytes)} download limit "
                "(lark.max_download_bytes), so it was not downloaded"
            ) from err
        except LarkAPIError as err:
            if err.code in NO_SCOPE:
                raise MediaError(
                    "the app lacks the permission to download it (im:message:readonly)"
                ) from err
            raise MediaError(f"Lark would not hand it over ({err.msg}, code {err.code})") from err
        except TimeoutError as err:
            raise MediaError("the download took too long") from err
        folder = self.folder(chat_id, message_id)
        target = folder / safe_name(name or got.filename, key)
        await asyncio.to_thread(_write, target, got.content)
        log.info("lark_resource_saved", kind=kind, bytes=len(got.content))
        return target


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
