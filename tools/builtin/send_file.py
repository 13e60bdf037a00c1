"""SendFileTool: send a file from this machine into the current chat (image or file message).

Where the interface can post right away (Lark: `rt.posters["lark"]`, handed in by the
composition root), the file is posted during the call, so the model learns whether it
arrived; elsewhere it is returned as an attachment (the terminal prints its path, the web
page offers it). Owner only: it sends the owner's data out; into a chat others read (a
group), every file is approved by the owner first (`share_check`).
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any, Literal

from larkbot.context import RequestContext
from tools.attachments import IMAGE_MAX_BYTES, AttachmentError, checked_size, human_size, kind_for
from tools.base import Attachment, BaseTool, ContextTool, ToolResult
from tools.builtin._paths import in_secrets, resolve
from tools.runtime import ToolRuntime


def _uuid(ctx: RequestContext, path: Path, size: int) -> str:
    """The same file sent again in the same turn (a re-run after a crash) posts once."""
    key = f"send_file#{ctx.message_id or ctx.session_id}#{path}#{size}"
    return hashlib.sha256(key.encode()).hexdigest()[:40]


class SendFileTool(ContextTool):
    """Sends a local file to the user: images inline, other files as file messages."""

    name = "send_file"
    description = (
        "Send a file from this machine to the user in the current chat: images (png, jpg, "
        "gif, webp, …, up to 10 MB) appear inline, other files (up to 30 MB) as file "
        "messages. Use it to deliver reports, exports or pictures you made or found."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Local file path, e.g. ~/out/report.pdf"},
            "caption": {"type": "string", "description": "Optional text sent with the file."},
        },
        "required": ["path"],
    }
    side_effect = True  # it posts into the chat: owners only, never shareable
    private_data = True  # and what it posts is a file of the owner's machine

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    def share_check(self, ctx: RequestContext, **kw: Any) -> str | None:
        """Into a chat where someone not an owner reads along (a group, a non-owner's DM),
        the owner approves each file: the model may have been talked into leaking it."""
        if ctx.interface != "lark" or (ctx.chat_type == "p2p" and ctx.is_owner):
            return None  # the owner's own DM, terminal or web page
        where = "group chat" if ctx.chat_type == "group" else "chat"
        path = resolve(str(kw.get("path", "")))
        return (
            f"send the file {path} into this {where} ({ctx.chat_id or 'unknown'}), where "
            "people who are not owners can read it"
        )

    def touched_paths(self, **kw: Any) -> list[str]:
        """The file it sends."""
        return [str(kw.get("path") or ".")]

    async def run_with(self, ctx: RequestContext, **kw: Any) -> ToolResult:
        """Check the file, then post it (where the interface can) or return it as an attachment."""
        path = resolve(str(kw.get("path", "")))
        if in_secrets(path, self.rt.settings.secrets_dir):
            return ToolResult("Error: files in the secrets directory are never sent.", True)
        try:
            size = await asyncio.to_thread(checked_size, path)
        except AttachmentError as err:
            return ToolResult(f"Error: {err}", is_error=True)
        inline = kind_for(path) == "image" and size <= IMAGE_MAX_BYTES  # bigger: as a file
        kind: Literal["image", "file"] = "image" if inline else "file"
        attachment = Attachment(str(path), kind, caption=str(kw.get("caption") or ""))
        shown = f"{path.name} ({human_size(size)})"
        poster = self.rt.posters.get(ctx.interface)
        if poster is None:
            return ToolResult(f"{shown} is attached for the user.", attachments=(attachment,))
        try:
            await poster.post_file(ctx, attachment, _uuid(ctx, path, size))
        except AttachmentError as err:
            return ToolResult(f"Error: {err}", is_error=True)
        return ToolResult(f"Sent {shown} to the chat as {'an image' if inline else 'a file'}.")


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The send_file tool."""
    return [SendFileTool(rt)]
