"""Sheets: a range read as a Markdown table; rows of values written to a range."""

from __future__ import annotations

import json
import re
from typing import Any

from tools.runtime import ToolRuntime
from tools.workspace.common import AskerTool, Session, WorkspaceError, md_table, resolve
from tools.workspace.links import Target, parse

V2 = "/open-apis/sheets/v2/spreadsheets"
MAX_WRITE_ROWS = 5000  # Lark's limit per write (and 100 columns)


def cell_text(value: Any) -> str:
    """A cell as text: rich segments (links, @mentions, formulas' values) flattened."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "".join(cell_text(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "name", "link", "value"):
            if value.get(key) not in (None, ""):
                return cell_text(value[key])
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_CELL = re.compile(r"^([A-Za-z]{1,3})(\d+)$")


def _column(n: int) -> str:
    name = ""
    while n:
        n, rest = divmod(n - 1, 26)
        name = chr(65 + rest) + name
    return name


def _number(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


def spread(cells: str, values: list[list[Any]]) -> str:
    """A top-left cell (`B2`, `sid!B2`) widened to the block `values` fill (`B2:D5`)."""
    sheet, _, cell = cells.rpartition("!")
    found = _CELL.match(cell.strip())
    if not found or not values:
        return cells
    col, row = _number(found.group(1)), int(found.group(2))
    width = max(len(r) for r in values) or 1
    end = f"{_column(col + width - 1)}{row + len(values) - 1}"
    return f"{sheet + '!' if sheet else ''}{cell.strip()}:{end}"


async def full_range(session: Session, target: Target, cells: str) -> str:
    """`<sheet_id>!A1:D20`: the link's `?sheet=`, else the first tab, when `cells` names none."""
    cells = cells.strip()
    if "!" in cells:
        return cells
    sheet = target.sheet
    if not sheet:
        data = await session.call(
            "GET", f"/open-apis/sheets/v3/spreadsheets/{target.token}/sheets/query"
        )
        tabs = data.get("sheets") or []
        if not tabs:
            raise WorkspaceError("this spreadsheet has no sheets")
        sheet = str(tabs[0].get("sheet_id", ""))
    return f"{sheet}!{cells}" if cells else sheet


async def read_range(
    session: Session, target: Target, rt: ToolRuntime | None = None, cells: str = ""
) -> str:
    """The range as a Markdown table (its first row as the header)."""
    where = await full_range(session, target, cells)
    data = await session.call(
        "GET",
        f"{V2}/{target.token}/values/{where}",
        params={"valueRenderOption": "ToString", "dateTimeRenderOption": "FormattedString"},
    )
    value_range = data.get("valueRange") or {}
    rows = [[cell_text(c) for c in row or []] for row in value_range.get("values") or []]
    while rows and not any(rows[-1]):  # Lark pads a sheet-wide range with empty rows
        rows.pop()
    if not rows:
        return f"{value_range.get('range', where)}: empty"
    return f"{value_range.get('range', where)} ({len(rows)} rows)\n\n" + md_table(rows[0], rows[1:])


class SheetRead(AskerTool):
    """`lark_sheet_read(url, range)`."""

    name = "lark_sheet_read"
    description = (
        "Read a range of a Lark/Feishu spreadsheet (link or token; range like A1:D20 or "
        "<sheet_id>!A1:D20, empty = the whole first sheet) as a table, with the user's access."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "range": {"type": "string", "description": "A1:D20, <sheet_id>!A1:D20, or empty"},
        },
        "required": ["url"],
    }
    user_scopes = ("sheets:spreadsheet:readonly", "wiki:node:read")
    subject = "this spreadsheet"

    async def work(self, session: Session, **kwargs: Any) -> str:
        """Resolve the link (wiki too) and read."""
        target = await resolve(session, parse(str(kwargs.get("url", "")), default="sheet"))
        if target.kind != "sheet":
            raise WorkspaceError(f"this link is a {target.kind}, not a spreadsheet")
        return await read_range(session, target, self.rt, str(kwargs.get("range") or ""))


class SheetWrite(AskerTool):
    """`lark_sheet_write(url, range, values)`."""

    name = "lark_sheet_write"
    description = (
        "Write rows of values into a range of a Lark/Feishu spreadsheet (values: a list of "
        "rows, each a list of cells), with the user's access. The user confirms on a card."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "range": {"type": "string", "description": "top-left cell or A1:C3 (sheet optional)"},
            "values": {
                "type": "array",
                "items": {"type": "array", "items": {}},
                "description": "rows of cells",
            },
        },
        "required": ["url", "range", "values"],
    }
    untrusted_output = False
    user_scopes = ("sheets:spreadsheet", "wiki:node:read")
    subject = "this spreadsheet"

    def consent_check(self, **kwargs: Any) -> str | None:
        """The cells that will change, as a table."""
        rows = [
            [cell_text(c) for c in r] for r in kwargs.get("values") or [] if isinstance(r, list)
        ]
        shown = md_table([], rows[:50]).split("\n", 2)[-1] if rows else "(nothing)"
        more = f"\n… and {len(rows) - 50} more rows" if len(rows) > 50 else ""
        return (
            f"write {len(rows)} row(s) into {kwargs.get('range', '')} of "
            f"{kwargs.get('url', '')}:\n{shown}{more}"
        )

    def consent_always(self, **kwargs: Any) -> bool:
        """Each write is confirmed on its own."""
        return True

    async def work(self, session: Session, **kwargs: Any) -> str:
        """One values write (Lark: ≤5000 rows × 100 columns)."""
        values = kwargs.get("values")
        if not isinstance(values, list) or not all(isinstance(r, list) for r in values):
            raise WorkspaceError("values must be a list of rows, each a list of cells")
        if len(values) > MAX_WRITE_ROWS or any(len(r) > 100 for r in values):
            raise WorkspaceError("at most 5000 rows of 100 cells in one write")
        target = await resolve(session, parse(str(kwargs.get("url", "")), default="sheet"))
        if target.kind != "sheet":
            raise WorkspaceError(f"this link is a {target.kind}, not a spreadsheet")
        cells = spread(str(kwargs.get("range") or "A1"), values)
        where = await full_range(session, target, cells)
        data = await session.call(
            "PUT",
            f"{V2}/{target.token}/values",
            json={"valueRange": {"range": where, "values": values}},
        )
        cells = data.get("updatedCells", sum(len(r) for r in values))
        return f"Wrote {cells} cells to {data.get('updatedRange', where)}."
