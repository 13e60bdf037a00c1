"""`GET /api/memory`: what the bot remembers, as the web page's owner may see it.

The web user acts as an owner ("web", the sole configured owner when there is one): the
page shows that owner's own memories and the chats' shared memories, never another person's.
"""

from __future__ import annotations

from aiohttp import web

from larkbot.web.handlers import service
from larkbot.web.service import web_context


async def list_memories(request: web.Request) -> web.Response:
    """The owner's own memories and every chat's, oldest first."""
    svc = service(request)
    if isinstance(svc, web.Response):
        return svc
    memory = svc.host.core.memory
    if memory is None:
        return web.json_response({"enabled": False, "memories": []})
    person = memory.person(web_context("web:memory"))
    items = [
        {
            "id": m.id,
            "scope": m.scope,
            "chat_id": m.chat_id if m.scope == "chat" else "",
            "content": m.content,
            "author": m.author_name or m.author_id,
            "author_owner": m.author_owner,
            "untrusted": m.untrusted,
            "pinned": m.pinned,
            "created_at": m.created_at,
        }
        for m in await memory.for_web(person)
    ]
    return web.json_response({"enabled": True, "memories": items})
