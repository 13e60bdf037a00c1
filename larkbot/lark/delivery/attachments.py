"""Files and images out: an `Attachment` → a Lark upload → an image or file message.

The one seam every Lark path uses (turn views for tool attachments such as screenshots,
`send_file`, scheduled runs): `deliver_attachment(client, attachment, target, uuid)`.

- images (`kind="image"`, ≤ 10 MB): `POST /im/v1/images` (image_type=message), then a
  `msg_type: image` message; an image Lark cannot read, or one over 10 MB, goes as a file;
- files (≤ 30 MB): `POST /im/v1/files` with the `file_type` of its extension, then
  `msg_type: file`;
- the caption, when there is one, follows as a text message.

Limits (`tools/attachments.py`, which `send_file` checks too) are checked before anything is
read or uploaded; every failure is an `AttachmentError` whose message is fit to show the user.
`LarkFilePoster` is how `send_file` posts during the turn without knowing Lark.
"""

from __future__ import annotations

import asyncio
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from larkbot.context import RequestContext
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import LarkAPIError
from larkbot.logs import get_logger
from tools.attachments import IMAGE_MAX_BYTES, AttachmentError, checked_size
from tools.base import Attachment

log = get_logger("larkbot.lark.delivery.attachments")

FILE_TYPES = {  # Lark's upload `file_type`; anything else is "stream"
    ".pdf": "pdf",
    ".doc": "doc",
    ".docx": "doc",
    ".xls": "xls",
    ".xlsx": "xls",
    ".ppt": "ppt",
    ".pptx": "ppt",
    ".mp4": "mp4",
    ".opus": "opus",
}
IMAGE_REJECTED = frozenset({234011, 234006})  # not an image Lark reads / over the image limit
MISSING_SCOPE = frozenset({99991672, 99991676, 99991679})


@dataclass(frozen=True)
class ReplyTarget:
    """Where a turn's messages go: a reply to `message_id` (in its topic), else new in `chat_id`.

    With both, the reply is paced in `chat_id`'s lane (in order with the chat's other sends).
    """

    message_id: str = ""
    in_thread: bool = False
    chat_id: str = ""


def file_type_for(name: str) -> str:
    """Lark's upload `file_type` for a file name."""
    return FILE_TYPES.get(Path(name).suffix.lower(), "stream")


def _refusal(err: LarkAPIError, name: str) -> AttachmentError:
    if err.code in MISSING_SCOPE:
        return AttachmentError(
            f"could not upload {name}: the app lacks the im:resource permission "
            "(add it in the Lark developer console)"
        )
    if err.code == 234006:
        return AttachmentError(f"{name} is larger than Lark accepts")
    return AttachmentError(f"Lark refused {name} ({err.msg}, code {err.code})")


async def post(
    client: LarkClient, target: ReplyTarget, msg_type: str, content: dict[str, Any], uuid: str
) -> str:
    """Reply to the target message (in its thread), or send to the target chat."""
    if target.message_id:
        return await client.reply(
            target.message_id,
            msg_type,
            content,
            uuid=uuid,
            reply_in_thread=target.in_thread,
            chat_id=target.chat_id,
        )
    return await client.send(target.chat_id, msg_type, content, uuid=uuid)


async def _upload(
    client: LarkClient, a: Attachment, data: bytes, name: str
) -> tuple[str, dict[str, Any]]:
    """(msg_type, content) after the upload: an image when Lark takes it as one, else a file."""
    if a.kind == "image" and len(data) <= IMAGE_MAX_BYTES:
        mime = a.mime if a.mime.startswith("image/") else mimetypes.guess_type(name)[0]
        try:
            key = await client.upload_image(data, name, mime or "application/octet-stream")
            return "image", {"image_key": key}
        except LarkAPIError as err:
            if err.code not in IMAGE_REJECTED:
                raise
            log.info("lark_image_sent_as_file", name=name, code=err.code)
    key = await client.upload_file(data, name, file_type_for(name))
    return "file", {"file_key": key}


async def deliver_attachment(
    client: LarkClient, attachment: Attachment, target: ReplyTarget, uuid: str
) -> str:
    """Upload and post one attachment (then its caption); returns the message_id.

    `uuid` makes the post idempotent (a retried or re-run turn cannot post it twice).
    Raises AttachmentError with a reason fit for the user; nothing else for Lark refusals.
    """
    path = Path(attachment.path)
    await asyncio.to_thread(checked_size, path)
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except OSError as err:
        raise AttachmentError(f"cannot read {path.name}: {err.strerror or err}") from err
    try:
        msg_type, content = await _upload(client, attachment, data, path.name)
        message_id = await post(client, target, msg_type, content, uuid)
        if attachment.caption.strip():
            await post(client, target, "text", {"text": attachment.caption}, f"{uuid[:44]}-cap")
    except LarkAPIError as err:
        raise _refusal(err, path.name) from err
    log.info("lark_attachment_sent", name=path.name, msg_type=msg_type, bytes=len(data))
    return message_id


async def deliver_all(
    client: LarkClient, attachments: list[Attachment], target: ReplyTarget, uuid_base: str
) -> None:
    """Deliver each attachment; one that fails is reported to the chat in a line, never raised."""
    for i, attachment in enumerate(attachments):
        uuid = f"{uuid_base[:40]}-a{i}"
        try:
            await deliver_attachment(client, attachment, target, uuid)
        except asyncio.CancelledError:
            raise
        except AttachmentError as err:
            log.warning("lark_attachment_failed", path=attachment.path, reason=str(err))
            note = {"text": f"(Could not send {Path(attachment.path).name}: {err})"}
            try:
                await post(client, target, "text", note, f"{uuid}-err")
            except LarkAPIError:
                log.warning("lark_attachment_notice_failed", exc_info=True)


class LarkFilePoster:
    """`tools.attachments.FilePoster` for Lark, handed to tools as `rt.posters["lark"]`.

    A reply to the asker's message (in its topic), or a new message in the chat of a run no
    message started (a scheduled job).
    """

    def __init__(self, client: LarkClient) -> None:
        self.client = client

    async def post_file(self, ctx: RequestContext, attachment: Attachment, key: str) -> None:
        """Upload and post `attachment` where `ctx` came from; the same `key` posts once."""
        if ctx.message_id:
            target = ReplyTarget(ctx.message_id, bool(ctx.thread_id), ctx.chat_id)
        else:
            target = ReplyTarget(chat_id=ctx.chat_id)
        await deliver_attachment(self.client, attachment, target, key)
