"""FakeLark's media and contact routes: uploads (multipart), message resources, users.

Shaped like the real Open Platform:
- POST /open-apis/im/v1/images  multipart `image_type` (message|avatar) + `image`; ≤ 10 MB
  (234006), not empty (234010), a real image (234011 "Can't recognize the image format");
- POST /open-apis/im/v1/files   multipart `file_type` (opus|mp4|pdf|doc|xls|ppt|stream),
  `file_name`, optional `duration`, `file`; ≤ 30 MB (234006), not empty (234010);
- GET  /open-apis/im/v1/messages/{id}/resources/{file_key}?type=image|file  the bytes, with
  Content-Type, Content-Length and Content-Disposition; unknown → 234003 "File not in msg";
- GET  /open-apis/contact/v3/users/{user_id}?user_id_type=open_id  `{"user": {...}}`;
  `fake.contact_scope = False` → 99991672 (the app lacks contact:user.base:readonly).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aiohttp import web

from tests.fakes.lark_cardkit import ApiError

if TYPE_CHECKING:
    from tests.fakes.lark_server import FakeLark

IMAGE_LIMIT = 10 * 1024 * 1024
FILE_LIMIT = 30 * 1024 * 1024
FILE_TYPES = frozenset({"opus", "mp4", "pdf", "doc", "xls", "ppt", "stream"})
CHUNK = 1024 * 1024


@dataclass
class Resource:
    """A file or image inside a user's message: real bytes, or `size` generated zero bytes."""

    content: bytes = b""
    content_type: str = "application/octet-stream"
    filename: str = ""
    size: int = 0  # > 0: serve this many zero bytes, streamed (a huge file without the memory)


@dataclass
class Upload:
    """One accepted upload: `kind` image|file, its key, name, file_type and bytes."""

    kind: str
    key: str
    name: str
    file_type: str
    content: bytes


async def _form(request: web.Request) -> dict[str, Any]:
    """The multipart fields: str for plain fields, (filename, bytes) for files."""
    if not request.content_type.startswith("multipart/"):
        raise ApiError(234001, "Invalid request param: multipart/form-data required")
    fields: dict[str, Any] = {}
    reader = await request.multipart()
    async for part in reader:
        if not hasattr(part, "read") or part.name is None:
            continue
        data = await part.read()  # type: ignore[union-attr]
        if part.filename is not None:  # type: ignore[union-attr]
            fields[part.name] = (part.filename, bytes(data))  # type: ignore[union-attr]
        else:
            fields[part.name] = bytes(data).decode("utf-8", "replace")
    return fields


def _is_image(data: bytes) -> bool:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            img.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return False
    return True


def _ok(data: dict[str, Any]) -> web.Response:
    return web.json_response({"code": 0, "msg": "success", "data": data})


def add_media_routes(app: web.Application, fake: FakeLark) -> None:
    """Register the upload, resource and contact routes on `app`."""

    async def upload_image(request: web.Request) -> web.Response:
        form = await _form(request)
        if form.get("image_type") not in ("message", "avatar"):
            raise ApiError(234001, "Invalid request param: image_type")
        image = form.get("image")
        if not isinstance(image, tuple):
            raise ApiError(234001, "Invalid request param: image")
        name, data = image
        if not data:
            raise ApiError(234010, "File's size can't be 0.")
        if len(data) > IMAGE_LIMIT:
            raise ApiError(234006, "The file size exceed the max value.")
        if not _is_image(data):
            raise ApiError(234011, "Can't recognize the image format.")
        key = fake.next_id("img_v3")
        fake.uploads.append(Upload("image", key, name, "", data))
        return _ok({"image_key": key})

    async def upload_file(request: web.Request) -> web.Response:
        form = await _form(request)
        file_type, name = form.get("file_type"), form.get("file_name")
        if file_type not in FILE_TYPES:
            raise ApiError(234001, "Invalid request param: file_type")
        upload = form.get("file")
        if not isinstance(name, str) or not name or not isinstance(upload, tuple):
            raise ApiError(234001, "Invalid request param: file_name and file are required")
        data = upload[1]
        if not data:
            raise ApiError(234010, "File's size can't be 0.")
        if len(data) > FILE_LIMIT:
            raise ApiError(234006, "The file size exceed the max value.")
        key = fake.next_id("file_v3")
        fake.uploads.append(Upload("file", key, name, str(file_type), data))
        return _ok({"file_key": key})

    async def resource(request: web.Request) -> web.StreamResponse:
        if request.query.get("type") not in ("image", "file"):
            raise ApiError(234001, "Invalid request param: type")
        key = (request.match_info["id"], request.match_info["file_key"])
        found = fake.resources.get(key)
        if found is None:
            raise ApiError(234003, "File not in msg.")
        fake.downloads.append(key)
        size = found.size or len(found.content)
        headers = {
            "Content-Type": found.content_type,
            "Content-Length": str(size),
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(found.filename)}",
        }
        resp = web.StreamResponse(headers=headers)
        await resp.prepare(request)
        if found.size:
            sent = 0
            while sent < found.size:
                n = min(CHUNK, found.size - sent)
                await resp.write(b"\0" * n)
                sent += n
        else:
            await resp.write(found.content)
        await resp.write_eof()
        return resp

    async def user(request: web.Request) -> web.Response:
        fake.contact_lookups += 1
        if not fake.contact_scope:
            raise ApiError(
                99991672,
                "Access denied. One of the following scopes is required: "
                "[contact:user.base:readonly, contact:contact.base:readonly]",
            )
        if request.query.get("user_id_type", "open_id") != "open_id":
            raise ApiError(99992402, "only open_id is faked")
        found = fake.users.get(request.match_info["user_id"])
        if found is None:
            raise ApiError(41050, "no user authority error")
        return _ok({"user": {"open_id": request.match_info["user_id"], **found}})

    app.router.add_post("/open-apis/im/v1/images", upload_image)
    app.router.add_post("/open-apis/im/v1/files", upload_file)
    app.router.add_get("/open-apis/im/v1/messages/{id}/resources/{file_key}", resource)
    app.router.add_get("/open-apis/contact/v3/users/{user_id}", user)
