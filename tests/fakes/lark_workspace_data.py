"""Sheets, bases (Bitable) and tasks in FakeLark's workspace (see lark_workspace.py).

Sheets: v3 `sheets/query`, v2 `values/{range}` read and `values` write (91204 when the person
may not open it). Bases: tables, fields, `records/search` (filters: is, isNot, contains,
doesNotContain, isGreater(Equal), isLess(Equal), isEmpty, isNotEmpty; and/or), `batch_create`
and `batch_update` refusing values the way Lark does (1254045 unknown field name, 1254061
number, 1254062 single select, 1254063 multi select, 1254066 person; 1254302 no permission).
Tasks v2: list (my tasks), create, patch (completed_at); search/v1/user for names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.lark_cardkit import ApiError
from tests.fakes.lark_routes import ok
from tests.fakes.lark_workspace import FakeWorkspace, Shared, body_of, forbidden, page


@dataclass
class FakeSheet(Shared):
    """A spreadsheet: tabs by sheet_id, each a list of rows."""

    tabs: dict[str, list[list[Any]]] = field(default_factory=dict)


@dataclass
class FakeTable:
    """One base table: Lark field dicts and records `{record_id, fields}`."""

    fields: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FakeBase(Shared):
    """A base: its tables by table_id."""

    tables: dict[str, FakeTable] = field(default_factory=dict)


_CELL = re.compile(r"([A-Z]+)(\d+)")


def _col(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n - 1


def _bounds(cells: str) -> tuple[int, int, int, int]:
    """`A1:C3` → (row0, col0, row1, col1), inclusive; empty = everything."""
    if not cells:
        return 0, 0, 10**6, 10**6
    start, _, end = cells.partition(":")
    a, b = _CELL.fullmatch(start), _CELL.fullmatch(end or start)
    if a is None or b is None:
        raise ApiError(90202, f"invalid range {cells}")
    return int(a[2]) - 1, _col(a[1]), int(b[2]) - 1, _col(b[1])


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_plain(v) for v in value)
    if isinstance(value, dict):
        return str(value.get("text") or value.get("name") or value.get("id") or "")
    return "" if value is None else str(value)


def matches(fields: dict[str, Any], spec: dict[str, Any] | None) -> bool:
    """Whether a record's fields pass a Lark filter (flat conditions)."""
    if not spec:
        return True
    results = []
    for cond in spec.get("conditions") or []:
        have = _plain(fields.get(cond.get("field_name")))
        want = str((cond.get("value") or [""])[0])
        op = cond.get("operator")
        try:
            number = float(have) - float(want)
        except ValueError:
            number = 0.0
        results.append(
            {
                "is": have == want,
                "isNot": have != want,
                "contains": want in have,
                "doesNotContain": want not in have,
                "isEmpty": not have,
                "isNotEmpty": bool(have),
                "isGreater": number > 0,
                "isGreaterEqual": number >= 0,
                "isLess": number < 0,
                "isLessEqual": number <= 0,
            }.get(str(op), False)
        )
    return any(results) if spec.get("conjunction") == "or" else all(results)


def check_value(field_: dict[str, Any], value: Any) -> None:
    """Refuse a value its field cannot hold, with Lark's code."""
    kind = field_.get("type")
    options = [o["name"] for o in (field_.get("property") or {}).get("options") or []]
    if kind == 2 and not isinstance(value, int | float):
        raise ApiError(1254061, "NumberFieldConvFail")
    if kind == 3 and (not isinstance(value, str) or (options and value not in options)):
        raise ApiError(1254062, "SingleSelectFieldConvFail")
    if kind == 4 and (not isinstance(value, list) or any(v not in options for v in value)):
        raise ApiError(1254063, "MultiSelectFieldConvFail")
    if kind == 11 and not (isinstance(value, list) and all("id" in v for v in value)):
        raise ApiError(1254066, "UserFieldConvFail")


def add_data_routes(app: web.Application, ws: FakeWorkspace) -> None:
    """Register the sheets, bitable, tasks and people-search routes."""

    def sheet_of(request: web.Request, scope: str, write: bool = False) -> FakeSheet:
        who = ws.caller(request, scope)
        sheet = ws.sheets.get(request.match_info["token"])
        if sheet is None:
            raise ApiError(91402, "spreadsheet not found")
        if who not in (sheet.writers if write else sheet.readers):
            raise _Forbidden(91204)
        return sheet

    async def tabs(request: web.Request) -> web.Response:
        sheet = sheet_of(request, "sheets:spreadsheet:readonly")
        return ok(
            {"sheets": [{"sheet_id": s, "title": s, "index": i} for i, s in enumerate(sheet.tabs)]}
        )

    async def read(request: web.Request) -> web.Response:
        sheet = sheet_of(request, "sheets:spreadsheet:readonly")
        where = request.match_info["range"]
        tab, _, cells = where.partition("!")
        rows = sheet.tabs.get(tab)
        if rows is None:
            raise ApiError(90215, f"sheet {tab} not found")
        r0, c0, r1, c1 = _bounds(cells)
        values = [row[c0 : c1 + 1] for row in rows[r0 : r1 + 1]]
        return ok({"valueRange": {"range": where, "values": values, "revision": 1}})

    async def write(request: web.Request) -> web.Response:
        sheet = sheet_of(request, "sheets:spreadsheet", write=True)
        value_range = body_of(request).get("valueRange") or {}
        tab, _, cells = str(value_range.get("range", "")).partition("!")
        r0, c0, _, _ = _bounds(cells)
        rows = sheet.tabs.setdefault(tab, [])
        values = value_range.get("values") or []
        for i, new in enumerate(values):
            while len(rows) <= r0 + i:
                rows.append([])
            row = rows[r0 + i]
            row.extend([None] * (c0 + len(new) - len(row)))
            row[c0 : c0 + len(new)] = new
        cells_n = sum(len(r) for r in values)
        return ok(
            {"updatedRange": value_range.get("range"), "updatedCells": cells_n, "revision": 2}
        )

    def table_of(request: web.Request, scope: str, write: bool = False) -> FakeTable:
        who = ws.caller(request, scope)
        base = ws.bases.get(request.match_info["app"])
        if base is None:
            raise ApiError(1254040, "app_token not found")
        if who not in (base.writers if write else base.readers):
            raise _Forbidden(1254302)
        table = base.tables.get(request.match_info.get("table", ""))
        if table is None and "table" in request.match_info:
            raise ApiError(1254041, "table not found")
        return table or FakeTable()

    async def tables(request: web.Request) -> web.Response:
        table_of(request, "bitable:app:readonly")
        base = ws.bases[request.match_info["app"]]
        return page([{"table_id": t, "name": t} for t in base.tables], request, 100)

    async def fields(request: web.Request) -> web.Response:
        return page(table_of(request, "bitable:app:readonly").fields, request, 100)

    async def search(request: web.Request) -> web.Response:
        table = table_of(request, "bitable:app:readonly")
        spec = body_of(request).get("filter")
        names = {f["field_name"] for f in table.fields}
        for cond in (spec or {}).get("conditions") or []:
            if cond.get("field_name") not in names:
                raise ApiError(1254045, "FieldNameNotFound")
        found = [r for r in table.records if matches(r["fields"], spec)]
        return page(found, request, 500)

    def checked(table: FakeTable, values: dict[str, Any]) -> dict[str, Any]:
        by_name = {f["field_name"]: f for f in table.fields}
        for name, value in values.items():
            if name not in by_name:
                raise ApiError(1254045, "FieldNameNotFound")
            if value is not None:
                check_value(by_name[name], value)
        return values

    async def batch_create(request: web.Request) -> web.Response:
        table = table_of(request, "bitable:app", write=True)
        rows = body_of(request).get("records") or []
        if len(rows) > 500:
            raise ApiError(1254104, "at most 500 records")
        made = [
            {"record_id": ws.new_id("rec"), "fields": checked(table, r["fields"])} for r in rows
        ]
        table.records.extend(made)
        return ok({"records": made})

    async def batch_update(request: web.Request) -> web.Response:
        table = table_of(request, "bitable:app", write=True)
        by_id = {r["record_id"]: r for r in table.records}
        done = []
        for row in body_of(request).get("records") or []:
            record = by_id.get(row.get("record_id"))
            if record is None:
                raise ApiError(1254043, "record not found")
            record["fields"].update(checked(table, row.get("fields") or {}))
            done.append(record)
        return ok({"records": done})

    async def list_tasks(request: web.Request) -> web.Response:
        who = ws.caller(request, "task:task:read")
        done = request.query.get("completed") == "true"
        mine = [t for t in ws.tasks.get(who, []) if bool(t.get("completed_at", "0") != "0") == done]
        return page(mine, request, 100)

    async def create_task(request: web.Request) -> web.Response:
        who = ws.caller(request, "task:task:write")
        task = {**body_of(request), "guid": ws.new_id("task-"), "completed_at": "0"}
        task["creator"] = {"id": who}
        for person in {who, *(m["id"] for m in task.get("members") or [])}:
            ws.tasks.setdefault(person, []).append(task)
        return ok({"task": task})

    async def patch_task(request: web.Request) -> web.Response:
        who = ws.caller(request, "task:task:write")
        task = next(
            (t for t in ws.tasks.get(who, []) if t["guid"] == request.match_info["guid"]), None
        )
        if task is None:
            raise ApiError(1470404, "task not found")
        task.update(body_of(request).get("task") or {})
        return ok({"task": task})

    async def users(request: web.Request) -> web.Response:
        ws.caller(request, "contact:user:search")
        query = request.query.get("query", "")
        return ok({"users": [p for p in ws.people if query in p["name"]], "has_more": False})

    v2 = "/open-apis/sheets/v2/spreadsheets/{token}"
    app.router.add_get("/open-apis/sheets/v3/spreadsheets/{token}/sheets/query", tabs)
    app.router.add_get(v2 + "/values/{range}", read)
    app.router.add_put(v2 + "/values", write)
    apps = "/open-apis/bitable/v1/apps/{app}/tables"
    app.router.add_get(apps, tables)
    app.router.add_get(apps + "/{table}/fields", fields)
    app.router.add_post(apps + "/{table}/records/search", search)
    app.router.add_post(apps + "/{table}/records/batch_create", batch_create)
    app.router.add_post(apps + "/{table}/records/batch_update", batch_update)
    app.router.add_get("/open-apis/task/v2/tasks", list_tasks)
    app.router.add_post("/open-apis/task/v2/tasks", create_task)
    app.router.add_patch("/open-apis/task/v2/tasks/{guid}", patch_task)
    app.router.add_get("/open-apis/search/v1/user", users)

    @web.middleware
    async def refusals(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            return await handler(request)
        except _Forbidden as err:
            return forbidden(err.code)

    app.middlewares.append(refusals)


class _Forbidden(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
