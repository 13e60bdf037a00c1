"""The four card kinds as A2UI v0.9 envelopes (createSurface + updateComponents), for web and CLI.

Basic catalog components only, so any A2UI v0.9 renderer draws them; the templates fix what
hand-written A2UI gets wrong: every component reachable from `root`, real newlines, rank
numbers as plain headings (not Cards), dividers between table rows.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from cards.a2ui_catalog import A2UI_VERSION, CATALOG_ID
from cards.spec import (
    CardSpec,
    CompareCard,
    RankCard,
    StatsCard,
    TimelineCard,
    item_count,
    more_text,
    shown_count,
)

Component = dict[str, Any]
STATS_PER_ROW = 3


def _text(cid: str, text: str, variant: str | None = None, **extra: Any) -> Component:
    comp: Component = {"id": cid, "component": "Text", "text": text}
    if variant:
        comp["variant"] = variant
    comp.update(extra)
    return comp


def _compare(spec: CompareCard, shown: int) -> tuple[list[str], list[Component]]:
    """A table: header row, then rows separated by dividers; cells weighted equally."""
    comps: list[Component] = []
    header = spec.shown_columns()
    comps.append(
        {"id": "head", "component": "Row", "children": [f"head_{j}" for j in range(len(header))]}
    )
    comps += [_text(f"head_{j}", c, "h5", weight=1) for j, c in enumerate(header)]
    children = ["head"]
    for i, row in enumerate(spec.rows[:shown]):
        children += [f"div_{i}", f"row_{i}"]
        comps.append({"id": f"div_{i}", "component": "Divider"})
        cells = spec.cells(row)
        comps.append(
            {
                "id": f"row_{i}",
                "component": "Row",
                "children": [f"cell_{i}_{j}" for j in range(len(cells))],
            }
        )
        comps += [_text(f"cell_{i}_{j}", c, weight=1) for j, c in enumerate(cells)]
    comps.append({"id": "table", "component": "Column", "children": children})
    return ["table"], comps


def _rank(spec: RankCard, shown: int) -> tuple[list[str], list[Component]]:
    """A list of rows: rank number, name (with its note), value."""
    comps: list[Component] = []
    items = []
    for i, item in enumerate(spec.items[:shown]):
        main = [f"name_{i}"] + ([f"note_{i}"] if item.note else [])
        row = [f"badge_{i}", f"main_{i}"] + ([f"value_{i}"] if item.value else [])
        items.append(f"item_{i}")
        comps.append({"id": f"item_{i}", "component": "Row", "children": row, "align": "center"})
        comps.append(_text(f"badge_{i}", f"{i + 1}.", "h4"))
        comps.append({"id": f"main_{i}", "component": "Column", "children": main, "weight": 1})
        comps.append(_text(f"name_{i}", f"**{item.name}**"))
        if item.note:
            comps.append(_text(f"note_{i}", item.note, "caption"))
        if item.value:
            comps.append(_text(f"value_{i}", item.value, "h5"))
    comps.append({"id": "ranking", "component": "List", "children": items})
    return ["ranking"], comps


def _stats(spec: StatsCard, shown: int) -> tuple[list[str], list[Component]]:
    """Rows of up to three boxed figures: big value, label, change."""
    comps: list[Component] = []
    rows = []
    stats = spec.stats[:shown]
    for r in range(0, len(stats), STATS_PER_ROW):
        row_id = f"stats_row_{r // STATS_PER_ROW}"
        rows.append(row_id)
        ids = list(range(r, min(r + STATS_PER_ROW, len(stats))))
        comps.append({"id": row_id, "component": "Row", "children": [f"stat_{i}" for i in ids]})
        for i in ids:
            stat = stats[i]
            inner = [f"stat_value_{i}", f"stat_label_{i}"] + (
                [f"stat_change_{i}"] if stat.change else []
            )
            value = stat.value + (f" {stat.unit}" if stat.unit else "")
            comps.append(
                {"id": f"stat_{i}", "component": "Card", "child": f"stat_box_{i}", "weight": 1}
            )
            comps.append(
                {"id": f"stat_box_{i}", "component": "Column", "children": inner, "align": "center"}
            )
            comps.append(_text(f"stat_value_{i}", value, "h2"))
            comps.append(_text(f"stat_label_{i}", stat.label, "caption"))
            if stat.change:
                comps.append(_text(f"stat_change_{i}", stat.change, "caption"))
    comps.append({"id": "stats", "component": "Column", "children": rows})
    return ["stats"], comps


def _timeline(spec: TimelineCard, shown: int) -> tuple[list[str], list[Component]]:
    """A list of rows: the time, then the title with its detail under it."""
    comps: list[Component] = []
    items = []
    for i, event in enumerate(spec.events[:shown]):
        main = [f"event_title_{i}"] + ([f"event_detail_{i}"] if event.detail else [])
        items.append(f"event_{i}")
        comps.append(
            {"id": f"event_{i}", "component": "Row", "children": [f"time_{i}", f"event_main_{i}"]}
        )
        comps.append(_text(f"time_{i}", event.time, "h5"))
        comps.append(
            {"id": f"event_main_{i}", "component": "Column", "children": main, "weight": 1}
        )
        comps.append(_text(f"event_title_{i}", f"**{event.title}**"))
        if event.detail:
            comps.append(_text(f"event_detail_{i}", event.detail, "caption"))
    comps.append({"id": "timeline", "component": "List", "children": items})
    return ["timeline"], comps


def components(spec: CardSpec) -> list[Component]:
    """The flat adjacency list: root Card → body Column → title, subtitle, content, notes."""
    shown = shown_count(spec)
    if isinstance(spec, CompareCard):
        content, comps = _compare(spec, shown)
    elif isinstance(spec, RankCard):
        content, comps = _rank(spec, shown)
    elif isinstance(spec, StatsCard):
        content, comps = _stats(spec, shown)
    else:
        content, comps = _timeline(spec, shown)
    head = [_text("title", spec.title, "h3")]
    if spec.subtitle:
        head.append(_text("subtitle", spec.subtitle, "caption"))
    tail = []
    hidden = item_count(spec) - shown
    if hidden:
        tail.append(_text("more", more_text(spec, hidden), "caption"))
    if spec.note:
        tail.append(_text("note", spec.note, "caption"))
    body_children = [c["id"] for c in head] + content + [c["id"] for c in tail]
    return [
        {"id": "root", "component": "Card", "child": "body"},
        {"id": "body", "component": "Column", "children": body_children},
        *head,
        *comps,
        *tail,
    ]


def surface_id(spec: CardSpec) -> str:
    """A stable surface id derived from the card's content (same card, same surface)."""
    digest = hashlib.sha256(json.dumps(spec.model_dump(), sort_keys=True).encode()).hexdigest()
    return f"card_{spec.kind}_{digest[:10]}"


def a2ui_messages(spec: CardSpec) -> list[dict[str, Any]]:
    """createSurface + updateComponents for the card."""
    sid = surface_id(spec)
    return [
        {"version": A2UI_VERSION, "createSurface": {"surfaceId": sid, "catalogId": CATALOG_ID}},
        {
            "version": A2UI_VERSION,
            "updateComponents": {"surfaceId": sid, "components": components(spec)},
        },
    ]


def a2ui_payload(spec: CardSpec) -> dict[str, Any]:
    """The ToolResult.ui shape for web/CLI: {"a2ui": {"surfaceId": ..., "messages": [...]}}."""
    messages = a2ui_messages(spec)
    return {"a2ui": {"surfaceId": messages[0]["createSurface"]["surfaceId"], "messages": messages}}
