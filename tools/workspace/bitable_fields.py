"""Base (Bitable) field types: values rendered readably, values checked and shaped for writes.

Type numbers and shapes: reference §4.4 (text 1, number 2, single select 3, multi select 4,
date 5, checkbox 7, person 11, phone 13, URL 15, attachment 17, links 18/21, location 22,
group 23; lookup/formula/auto fields are read-only).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

READ_ONLY = frozenset({19, 20, 24, 1001, 1002, 1003, 1004, 1005, 3001})


class FieldError(ValueError):
    """A value that does not fit its field (the message names the field and what fits)."""


def options(field: dict[str, Any]) -> list[str]:
    """A select field's option names."""
    prop = field.get("property") or {}
    return [str(o.get("name")) for o in prop.get("options") or [] if isinstance(o, dict)]


def render(value: Any, kind: int, tz: ZoneInfo | None = None) -> str:
    """One cell as text: names for people, dates as dates, attachments by file name."""
    if value is None or value == []:
        return ""
    if kind == 5 and isinstance(value, int | float):
        moment = datetime.fromtimestamp(value / 1000, UTC).astimezone(tz or UTC)
        return (
            f"{moment:%Y-%m-%d}"
            if moment.hour == moment.minute == 0
            else f"{moment:%Y-%m-%d %H:%M}"
        )
    if kind == 7:
        return "yes" if value else "no"
    if kind in (19, 20) and isinstance(value, dict) and "value" in value:
        return render(value["value"], int(value.get("type") or 1), tz)
    if kind in (18, 21) and isinstance(value, dict):
        return ", ".join(str(r) for r in value.get("link_record_ids") or [])
    if isinstance(value, list):
        return (
            ", ".join(filter(None, (_item(v) for v in value)))
            if kind != 1
            else "".join(_item(v) for v in value)
        )
    if isinstance(value, dict):
        return _item(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _item(value: Any) -> str:
    if not isinstance(value, dict):
        return str(value)
    if value.get("type") == "mention" or ("name" in value and "id" in value):
        return f"@{value.get('name') or value.get('text') or value.get('id')}"
    if value.get("link") and value.get("text") and value.get("link") != value.get("text"):
        return f"{value['text']} ({value['link']})"
    for key in ("text", "name", "full_address", "link", "record_id", "id"):
        if value.get(key):
            return str(value[key])
    return json.dumps(value, ensure_ascii=False)


def _date(name: str, value: Any, tz: ZoneInfo) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value if value > 10**11 else value * 1000)  # seconds are taken as seconds
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        raise FieldError(
            f"field {name!r} is a date: give YYYY-MM-DD, an ISO date-time or a Unix time"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return int(moment.timestamp() * 1000)


def _select(name: str, field: dict[str, Any], wanted: list[Any]) -> list[str]:
    allowed = options(field)
    for item in wanted:
        if allowed and str(item) not in allowed:
            raise FieldError(
                f"field {name!r} has no option {item!r}; allowed: {', '.join(allowed)}"
            )
    return [str(i) for i in wanted]


def shape(name: str, field: dict[str, Any], value: Any, tz: ZoneInfo) -> Any:
    """`value` as Lark wants it for this field; FieldError when it does not fit."""
    kind = int(field.get("type") or 1)
    if value is None:
        return None  # clears the field on update
    if kind in READ_ONLY:
        raise FieldError(f"field {name!r} is computed by the base and cannot be written")
    if kind in (1, 13):
        return str(value)
    if kind == 2:
        try:
            return float(value) if not float(value).is_integer() else int(float(value))
        except (TypeError, ValueError):
            raise FieldError(f"field {name!r} is a number, not {value!r}") from None
    if kind == 3:
        return _select(name, field, [value])[0]
    if kind == 4:
        items = value if isinstance(value, list) else [v.strip() for v in str(value).split(",")]
        return _select(name, field, items)
    if kind == 5:
        return _date(name, value, tz)
    if kind == 7:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "yes", "1", "false", "no", "0"):
            return str(value).lower() in ("true", "yes", "1")
        raise FieldError(f"field {name!r} is a checkbox: give true or false")
    if kind in (11, 23):
        ids = value if isinstance(value, list) else [value]
        people = [i.get("id") if isinstance(i, dict) else i for i in ids]
        if not all(isinstance(p, str) and p.startswith(("ou_", "oc_")) for p in people):
            raise FieldError(f"field {name!r} takes open_ids (ou_…), not names: {value!r}")
        return [{"id": p} for p in people]
    if kind == 15:
        return value if isinstance(value, dict) else {"text": str(value), "link": str(value)}
    if kind in (18, 21):
        return value if isinstance(value, list) else [value]
    if kind == 17:
        raise FieldError(f"field {name!r} holds attachments, which cannot be written here")
    return value


def shape_record(fields: dict[str, dict[str, Any]], record: Any, tz: ZoneInfo) -> dict[str, Any]:
    """A `{field name: value}` record shaped for Lark, every name and value checked."""
    if not isinstance(record, dict) or not record:
        raise FieldError("each record must be an object of {field name: value}")
    out: dict[str, Any] = {}
    for name, value in record.items():
        field = fields.get(name)
        if field is None:
            raise FieldError(f"the table has no field {name!r}; its fields: {', '.join(fields)}")
        out[name] = shape(name, field, value, tz)
    return out
