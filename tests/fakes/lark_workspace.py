"""The Lark workspace in FakeLark: documents, wiki, search, acting as the person whose token it is.

`fake.workspace` (a FakeWorkspace) holds the objects and who may open them; `authorize(open_id)`
issues that person a user token (`u-…`) the routes map back to them. Every workspace call is
recorded in `calls` with the bearer it carried and whose it was ("tenant" for the bot's `t-`
token, which no document here lets in unless `"tenant"` is among its readers).
Routes (Lark's paths; paging with `has_more` / `page_token`):
- GET  /open-apis/docs/v1/content (markdown export), GET /open-apis/docx/v1/documents/{id}
- GET  /open-apis/doc/v2/{token}/raw_content (a legacy `doc`: its text; seed with `add_doc`)
- POST /open-apis/docx/v1/documents, …/documents/blocks/convert, …/{id}/blocks/{id}/descendant
- GET  /open-apis/wiki/v2/spaces/get_node; POST /open-apis/search/v2/doc_wiki/search
- sheets, bitable and tasks: tests/fakes/lark_workspace_data.py
Errors as Lark answers them: 1770032 (no permission on the document, HTTP 403), 1770002 (not
found), 131006 (wiki), 99991679 (the person's token lacks a scope: `missing_scopes[open_id]`),
99991672 (the app lacks it: `app_missing_scopes`), 99991663 (unknown token).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.lark_cardkit import ApiError
from tests.fakes.lark_routes import JSON_BODY, ok


@dataclass
class Shared:
    """Who may open (read) and change (write) one object."""

    readers: set[str] = field(default_factory=set)
    writers: set[str] = field(default_factory=set)


@dataclass
class FakeDoc(Shared):
    """A docx document kept as its Markdown export."""

    title: str = ""
    markdown: str = ""


@dataclass
class WsCall:
    """One workspace call: its route, the bearer it carried, and whose that bearer is."""

    route: str
    bearer: str
    who: str


@dataclass
class FakeWorkspace:
    """Objects, people's tokens, and the record of calls (see the module docstring)."""

    tokens: dict[str, str] = field(default_factory=dict)  # user token -> open_id
    docs: dict[str, FakeDoc] = field(default_factory=dict)
    wiki: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # node: type, token, title
    sheets: dict[str, Any] = field(default_factory=dict)  # token -> FakeSheet
    bases: dict[str, Any] = field(default_factory=dict)  # app_token -> FakeBase
    tasks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # open_id -> tasks
    people: list[dict[str, str]] = field(default_factory=list)  # {open_id, name} for search
    calls: list[WsCall] = field(default_factory=list)
    missing_scopes: dict[str, set[str]] = field(default_factory=dict)
    app_missing_scopes: set[str] = field(default_factory=set)
    valid: set[str] = field(default_factory=set)  # FakeLark's accepted bearers
    # tokens the fake accounts server issued (token -> person with `open_id` and `scopes`)
    user_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def authorize(self, open_id: str) -> str:
        """Issue `open_id` a user access token."""
        token = f"u-{open_id}-{next(self.ids)}"
        self.tokens[token] = open_id
        self.valid.add(token)
        return token

    def add_doc(self, doc_id: str, markdown: str, readers: set[str], title: str = "") -> FakeDoc:
        """Seed a docx document readable (and writable) by `readers`."""
        doc = FakeDoc(set(readers), set(readers), title, markdown)
        self.docs[doc_id] = doc
        return doc

    def new_id(self, prefix: str) -> str:
        """A fresh object id."""
        return f"{prefix}{next(self.ids):06d}"

    def bearers(self, route_part: str = "") -> list[str]:
        """Whose tokens the calls (whose route contains `route_part`) carried."""
        return [c.who for c in self.calls if route_part in c.route]

    def caller(self, request: web.Request, scope: str) -> str:
        """The person (or "tenant") the bearer belongs to; the scope must be granted."""
        bearer = request.headers.get("Authorization", "")[7:]
        resource = request.match_info.route.resource
        route = f"{request.method} {resource.canonical if resource else request.path}"
        person = self.user_tokens.get(bearer)
        who = self.tokens.get(bearer) or ("tenant" if bearer.startswith("t-") else "")
        who = str(person["open_id"]) if person is not None else who
        self.calls.append(WsCall(route, bearer, who or "?"))
        if not who:
            raise ApiError(99991663, "Invalid access token for authorization")
        if person is not None and scope not in person.get("scopes", ()):
            violation = {"permission_violations": [{"type": "scope", "subject": scope}]}
            raise ApiError(99991679, f"user has not granted: {scope}", error=violation)
        if scope in self.app_missing_scopes:
            raise ApiError(99991672, f"app scope not enabled: {scope}")
        if scope in self.missing_scopes.get(who, set()):
            violation = {"permission_violations": [{"type": "scope", "subject": scope}]}
            raise ApiError(99991679, f"user has not granted: {scope}", error=violation)
        return who


def forbidden(code: int = 1770032, msg: str = "forbidden") -> web.Response:
    """Lark's answer to a person without permission on the object."""
    return web.json_response({"code": code, "msg": msg}, status=403)


def body_of(request: web.Request) -> dict[str, Any]:
    """The parsed JSON body (FakeLark's middleware read it)."""
    body = request.get(JSON_BODY)
    return body if isinstance(body, dict) else {}


def page(items: list[Any], request: web.Request, size: int, key: str = "items") -> web.Response:
    """One page of `items` with `has_more` / `page_token` (an offset, as text)."""
    start = int(request.query.get("page_token") or 0)
    size = max(1, min(int(request.query.get("page_size") or size), size))
    chunk = items[start : start + size]
    more = start + size < len(items)
    data = {key: chunk, "has_more": more, "page_token": str(start + size) if more else ""}
    return ok({**data, "total": len(items)})


def _text(content: str) -> dict[str, Any]:
    return {"elements": [{"text_run": {"content": content}}]}


def convert(markdown: str, ids: itertools.count[int]) -> tuple[list[str], list[dict[str, Any]]]:
    """Markdown → docx blocks as Lark's convert does (headings, lists, code, quotes, tables)."""
    first: list[str] = []
    blocks: list[dict[str, Any]] = []

    def add(block: dict[str, Any], top: bool = True) -> str:
        block["block_id"] = f"blk{next(ids)}"
        blocks.append(block)
        if top:
            first.append(block["block_id"])
        return str(block["block_id"])

    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = next(
                (j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines)
            )
            code = "\n".join(lines[i + 1 : end])
            add({"block_type": 14, "code": {**_text(code), "style": {"language": line[3:]}}})
            i = end + 1
            continue
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(set(c) <= set("-: ") for c in cells):
                    rows.append(cells)
                i += 1
            cell_ids = []
            for row in rows:
                for cell in row:
                    text = add({"block_type": 2, "text": _text(cell)}, top=False)
                    cell_ids.append(
                        add({"block_type": 32, "table_cell": {}, "children": [text]}, top=False)
                    )
            prop = {
                "row_size": len(rows),
                "column_size": len(rows[0]) if rows else 0,
                "merge_info": [],
            }
            add({"block_type": 31, "table": {"property": prop}, "children": cell_ids})
            continue
        stripped = line.lstrip()
        if stripped.startswith("#"):
            level = len(stripped) - len(stripped.lstrip("#"))
            add({"block_type": 2 + level, f"heading{level}": _text(stripped[level:].strip())})
        elif stripped[:2] in ("- ", "* "):
            add({"block_type": 12, "bullet": _text(stripped[2:])})
        elif stripped[:1].isdigit() and ". " in stripped[:4]:
            add({"block_type": 13, "ordered": _text(stripped.split(". ", 1)[1])})
        elif stripped.startswith("> "):
            add({"block_type": 15, "quote": _text(stripped[2:])})
        elif stripped:
            add({"block_type": 2, "text": _text(stripped)})
        i += 1
    return first, blocks


def render(block_id: str, by_id: dict[str, dict[str, Any]]) -> str:
    """A stored block back to Markdown (what the markdown export would show)."""
    block = by_id[block_id]
    kind = int(block["block_type"])

    def words(key: str) -> str:
        return "".join(e["text_run"]["content"] for e in block[key]["elements"])

    if 3 <= kind <= 11:
        return "#" * (kind - 2) + " " + words(f"heading{kind - 2}")
    if kind == 31:
        cols = int(block["table"]["property"]["column_size"]) or 1
        cells = [render(by_id[c]["children"][0], by_id) for c in block["children"]]
        rows = [cells[r : r + cols] for r in range(0, len(cells), cols)]
        out = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * cols]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows[1:]])
    named = {2: ("text", ""), 12: ("bullet", "- "), 13: ("ordered", "1. "), 15: ("quote", "> ")}
    if kind == 14:
        return f"```{block['code'].get('style', {}).get('language', '')}\n{words('code')}\n```"
    key, lead = named.get(kind, ("text", ""))
    return lead + words(key)


def add_workspace_routes(app: web.Application, fake: Any) -> None:
    """Register the documents, wiki and search routes (and lark_workspace_data's)."""
    from tests.fakes.lark_workspace_data import add_data_routes

    ws: FakeWorkspace = fake.workspace
    ws.valid = fake.valid_tokens
    ws.user_tokens = fake.user_tokens

    def readable(doc_id: str, who: str) -> FakeDoc | web.Response:
        doc = ws.docs.get(doc_id)
        if doc is None:
            return web.json_response({"code": 1770002, "msg": "not found"}, status=404)
        return doc if who in doc.readers else forbidden()

    async def content(request: web.Request) -> web.Response:
        who = ws.caller(request, "docs:document.content:read")
        doc = readable(request.query.get("doc_token", ""), who)
        return doc if isinstance(doc, web.Response) else ok({"content": doc.markdown})

    async def legacy(request: web.Request) -> web.Response:
        # Lark accepts docs:doc(:readonly) or drive:drive(:readonly) here, not the docx scopes
        who = ws.caller(request, "docs:doc:readonly")
        doc = readable(request.match_info["token"], who)
        return doc if isinstance(doc, web.Response) else ok({"content": doc.markdown})

    async def meta(request: web.Request) -> web.Response:
        doc = readable(request.match_info["id"], ws.caller(request, "docx:document:readonly"))
        if isinstance(doc, web.Response):
            return doc
        return ok({"document": {"document_id": request.match_info["id"], "title": doc.title}})

    async def create(request: web.Request) -> web.Response:
        who = ws.caller(request, "docx:document:create")
        doc_id = ws.new_id("doxcn")
        ws.docs[doc_id] = FakeDoc({who}, {who}, str(body_of(request).get("title", "")), "")
        return ok({"document": {"document_id": doc_id, "revision_id": 1}})

    async def convert_route(request: web.Request) -> web.Response:
        ws.caller(request, "docx:document:write_only")
        body = body_of(request)
        first, blocks = convert(str(body.get("content", "")), ws.ids)
        return ok({"first_level_block_ids": first, "blocks": blocks, "block_id_to_image_urls": []})

    async def descendant(request: web.Request) -> web.Response:
        who = ws.caller(request, "docx:document:write_only")
        doc = ws.docs.get(request.match_info["id"])
        if doc is None or who not in doc.writers:
            return forbidden()
        body = body_of(request)
        by_id = {b["block_id"]: b for b in body.get("descendants") or []}
        if any("merge_info" in (b.get("table") or {}).get("property", {}) for b in by_id.values()):
            raise ApiError(1770001, "invalid param: merge_info is read-only")
        if not set(body.get("children_id") or []) <= set(by_id):
            raise ApiError(1770006, "descendants do not hold every children_id")
        added = "\n\n".join(render(b, by_id) for b in body.get("children_id") or [])
        doc.markdown = f"{doc.markdown.rstrip()}\n\n{added}".strip() + "\n"
        return ok({"children": list(by_id.values()), "document_revision_id": 2})

    async def get_node(request: web.Request) -> web.Response:
        who = ws.caller(request, "wiki:node:read")
        node = ws.wiki.get(request.query.get("token", ""))
        if node is None:
            raise ApiError(131005, "node not found")
        kind, token, title = node
        target = ws.docs.get(token) or ws.sheets.get(token) or ws.bases.get(token)
        if target is None or who not in target.readers:
            return forbidden(131006, "no wiki permission")
        return ok({"node": {"obj_type": kind, "obj_token": token, "title": title}})

    async def search(request: web.Request) -> web.Response:
        who = ws.caller(request, "search:docs:read")
        query = str(body_of(request).get("query", "")).lower()
        if len(query) > 30:
            raise ApiError(99992402, "query too long")
        units = [
            {
                "title_highlighted": f"<h>{d.title}</h>",
                "summary_highlighted": d.markdown[:80],
                "entity_type": "DOC",
                "result_meta": {"token": i, "url": f"https://x.feishu.cn/docx/{i}"},
            }
            for i, d in ws.docs.items()
            if who in d.readers and (query in d.title.lower() or query in d.markdown.lower())
        ]
        return page(units, request, 20, key="res_units")

    docx = "/open-apis/docx/v1/documents"
    app.router.add_get("/open-apis/docs/v1/content", content)
    app.router.add_get("/open-apis/doc/v2/{token}/raw_content", legacy)
    app.router.add_post(docx, create)
    app.router.add_post(f"{docx}/blocks/convert", convert_route)
    app.router.add_get(docx + "/{id}", meta)
    app.router.add_post(docx + "/{id}/blocks/{block_id}/descendant", descendant)
    app.router.add_get("/open-apis/wiki/v2/spaces/get_node", get_node)
    app.router.add_post("/open-apis/search/v2/doc_wiki/search", search)
    add_data_routes(app, ws)
