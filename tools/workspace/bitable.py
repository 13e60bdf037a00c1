"""Bases (Bitable): records listed or filtered with readable values; rows created or updated
by field name, every value checked against the table's fields before anyone is asked."""

from __future__ import annotations

import json
import re
from typing import Any
from zoneinfo import ZoneInfo

from tools.runtime import ToolRuntime
from tools.workspace.bitable_fields import FieldError, render, shape_record
from tools.workspace.common import PAGE_CHARS, AskerTool, Session, WorkspaceError, md_table, resolve
from tools.workspace.links import Target, parse

APPS = "/open-apis/bitable/v1/apps"
MAX_READ = 1000
BATCH = 500  # Lark allows 1,000 but refuses some adds over 500 (1254104)
_OPS = [
    ("is not empty", "isNotEmpty"),
    ("is empty", "isEmpty"),
    ("not contains", "doesNotContain"),
    ("contains", "contains"),
    ("!=", "isNot"),
    (">=", "isGreaterEqual"),
    ("<=", "isLessEqual"),
    ("=", "is"),
    (">", "isGreater"),
    ("<", "isLess"),
]
_SPLIT = re.compile(r"\s+(and|or)\s+", re.IGNORECASE)


def zone(rt: ToolRuntime | None) -> ZoneInfo:
    """The configured time zone (dates are shown and read in it)."""
    return (rt.settings.scheduler.zone() if rt else None) or ZoneInfo("UTC")


async def locate(session: Session, link: str) -> Target:
    """The base and table a link (or wiki link) names; the first table when it names none."""
    target = await resolve(session, parse(link, default="bitable"))
    if target.kind != "bitable":
        raise WorkspaceError(f"this link is a {target.kind}, not a base")
    if target.table:
        return target
    data = await session.call("GET", f"{APPS}/{target.token}/tables", params={"page_size": 100})
    tables = data.get("items") or []
    if not tables:
        raise WorkspaceError("this base has no tables")
    return Target("bitable", target.token, str(tables[0].get("table_id")), target.view)


async def fields_of(session: Session, target: Target) -> dict[str, dict[str, Any]]:
    """The table's fields by name."""
    items = await session.pages(
        "GET", f"{APPS}/{target.token}/tables/{target.table}/fields", params={"page_size": 100}
    )
    return {str(f.get("field_name")): f for f in items}


def parse_filter(text: Any, fields: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """`Status = Done and Score > 3` (or Lark's own filter object) → Lark's filter."""
    if isinstance(text, dict):
        return text
    raw = str(text or "").strip()
    if not raw:
        return None
    if raw.startswith("{"):
        try:
            return dict(json.loads(raw))
        except (ValueError, TypeError):
            raise WorkspaceError("the filter is not valid JSON") from None
    parts = _SPLIT.split(raw)
    joins = {p.lower() for p in parts[1::2]}
    if len(joins) > 1:
        raise WorkspaceError("use either 'and' or 'or' between conditions, not both")
    conditions = [_condition(p, fields) for p in parts[0::2]]
    return {"conjunction": joins.pop() if joins else "and", "conditions": conditions}


def _condition(text: str, fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    for word, op in _OPS:
        at = text.find(f" {word}" if word[0].isalpha() else word)
        if at > 0:
            name = text[:at].strip().strip("\"'`")
            value = text[at + len(word) + (1 if word[0].isalpha() else 0) :].strip()
            value = value.strip("\"'`")
            if name not in fields:
                raise WorkspaceError(
                    f"the filter names no field of this table: {name!r}; fields: "
                    f"{', '.join(fields)}"
                )
            return {"field_name": name, "operator": op, "value": [value] if value else []}
    raise WorkspaceError(
        f"cannot read the condition {text!r}: write `Field = value` (also !=, >, <, >=, <=, "
        "contains, not contains, is empty, is not empty), joined by and / or"
    )


async def read_table(
    session: Session,
    target: Target,
    rt: ToolRuntime | None = None,
    condition: Any = None,
    limit: int = 100,
) -> str:
    """Records as a Markdown table, values by field type, cut to fit the output limit."""
    if not target.table:
        target = await locate(session, f"https://x.feishu.cn/base/{target.token}")
    fields = await fields_of(session, target)
    body: dict[str, Any] = {"automatic_fields": False}
    found = parse_filter(condition, fields)
    if found:
        body["filter"] = found
    if target.view:
        body["view_id"] = target.view
    limit = max(1, min(int(limit or 100), MAX_READ))
    records = await session.pages(
        "POST",
        f"{APPS}/{target.token}/tables/{target.table}/records/search",
        params={"page_size": min(BATCH, limit), "user_id_type": "open_id"},
        json=body,
        limit=limit,
    )
    if not records:
        return f"No records{' match the filter' if found else ''} in table {target.table}."
    tz = zone(rt)
    names = [n for n, f in fields.items() if not f.get("is_hidden")]
    kinds = {n: int(fields[n].get("type") or 1) for n in names}
    rows: list[list[Any]] = []
    size = 0
    for record in records:
        values = record.get("fields") or {}
        row = [record.get("record_id", ""), *(render(values.get(n), kinds[n], tz) for n in names)]
        size += sum(len(str(c)) + 3 for c in row)
        if size > PAGE_CHARS - 400 and rows:
            break
        rows.append(row)
    more = len(records) - len(rows)
    note = f"\n\n[{more} more records not shown: narrow the filter]" if more else ""
    head = (
        f"Table {target.table}: {len(records)} record(s){' matching the filter' if found else ''}"
    )
    if len(records) >= limit:
        head += f" (first {limit}; raise limit for more)"
    return head + "\n\n" + md_table(["record_id", *names], rows) + note


class BitableRead(AskerTool):
    """`lark_bitable_read(url, filter, limit)`."""

    name = "lark_bitable_read"
    description = (
        "List or filter the records of a Lark/Feishu base (Bitable) table (link with "
        "?table=…, or token), with readable values, using the user's own access. Filter like "
        "`Status = Done and Score > 3` (=, !=, >, <, >=, <=, contains, is empty)."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "filter": {"type": "string", "description": "conditions joined by and / or"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_READ},
        },
        "required": ["url"],
    }
    user_scopes = ("bitable:app:readonly", "wiki:node:read")
    subject = "this base"

    async def work(self, session: Session, **kwargs: Any) -> str:
        """Locate the table and read."""
        target = await locate(session, str(kwargs.get("url", "")))
        return await read_table(
            session, target, self.rt, kwargs.get("filter"), int(kwargs.get("limit") or 100)
        )


class BitableWrite(AskerTool):
    """`lark_bitable_write(url, records, record_ids)`."""

    name = "lark_bitable_write"
    description = (
        "Add rows to a Lark/Feishu base table, or change rows (give record_ids, one per "
        "record): records are {field name: value} objects; select values must be existing "
        "options, people open_ids, dates YYYY-MM-DD. The user confirms on a card."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "records": {"type": "array", "items": {"type": "object"}},
            "record_ids": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["url", "records"],
    }
    untrusted_output = False
    user_scopes = ("bitable:app", "wiki:node:read")
    subject = "this base"

    def consent_check(self, **kwargs: Any) -> str | None:
        """The rows added or changed, with their values."""
        records = [r for r in kwargs.get("records") or [] if isinstance(r, dict)]
        ids = list(kwargs.get("record_ids") or [])
        names = list(dict.fromkeys(k for r in records for k in r))
        rows = [
            [*([ids[i]] if i < len(ids) else []), *(r.get(n, "") for n in names)]
            for i, r in enumerate(records[:30])
        ]
        table = md_table(["record", *names] if ids else names, rows)
        more = f"\n… and {len(records) - 30} more" if len(records) > 30 else ""
        verb = f"change {len(records)} row(s)" if ids else f"add {len(records)} row(s)"
        return f"{verb} in {kwargs.get('url', '')}:\n{table}{more}"

    def consent_always(self, **kwargs: Any) -> bool:
        """Each write is confirmed on its own."""
        return True

    async def _shaped(self, session: Session, **kwargs: Any) -> tuple[Target, list[dict[str, Any]]]:
        records = kwargs.get("records")
        ids = kwargs.get("record_ids") or []
        if not isinstance(records, list) or not records:
            raise WorkspaceError("records must be a non-empty list of {field name: value}")
        if ids and len(ids) != len(records):
            raise WorkspaceError("give one record_id per record to change rows")
        target = await locate(session, str(kwargs.get("url", "")))
        fields = await fields_of(session, target)
        tz = zone(self.rt)
        try:
            return target, [shape_record(fields, r, tz) for r in records]
        except FieldError as err:
            raise WorkspaceError(str(err)) from None

    async def precheck(self, session: Session, **kwargs: Any) -> None:
        """Every name and value checked against the table before the asker is asked."""
        await self._shaped(session, **kwargs)

    async def work(self, session: Session, **kwargs: Any) -> str:
        """Create or update in batches of ≤500, one after another (one writer per base)."""
        target, shaped = await self._shaped(session, **kwargs)
        ids = list(kwargs.get("record_ids") or [])
        base = f"{APPS}/{target.token}/tables/{target.table}/records"
        done: list[str] = []
        for start in range(0, len(shaped), BATCH):
            chunk = shaped[start : start + BATCH]
            if ids:
                rows = [
                    {"record_id": i, "fields": f} for i, f in zip(ids[start:], chunk, strict=False)
                ]
                data = await session.call("POST", f"{base}/batch_update", json={"records": rows})
            else:
                rows = [{"fields": f} for f in chunk]
                data = await session.call("POST", f"{base}/batch_create", json={"records": rows})
            done += [str(r.get("record_id")) for r in data.get("records") or []]
        verb = "Changed" if ids else "Added"
        return f"{verb} {len(done)} row(s): {', '.join(done[:20])}{' …' if len(done) > 20 else ''}"
