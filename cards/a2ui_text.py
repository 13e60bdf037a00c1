"""Terminal rendering of A2UI for `larkbot chat`: the tree rebuilt from the adjacency list, Cards as
panel-like boxes, tables aligned. Pure; never raises on odd input."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from cards.a2ui_validate import child_refs

_HR = "\x00hr"  # placeholder line: a Divider stretched to its container's width
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
MAX_DEPTH = 40


def display_width(text: str) -> int:
    """Terminal columns a string takes (CJK and other wide characters count two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def _pointer_get(data: Any, path: str) -> Any:
    for part in [p for p in path.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


class _Surface:
    """One surface: components by id and the data model, rendered from `root`."""

    def __init__(self) -> None:
        self.components: dict[str, dict[str, Any]] = {}
        self.data: Any = {}

    def set_data(self, path: str | None, value: Any) -> None:
        """Apply an updateDataModel (top-level keys only beyond the root; enough for display)."""
        parts = [p for p in (path or "/").split("/") if p]
        if not parts:
            self.data = value if value is not None else {}
            return
        node = self.data if isinstance(self.data, dict) else {}
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                return
        node[parts[-1]] = value
        self.data = self.data if isinstance(self.data, dict) else node

    def text(self, value: Any) -> str:
        """A DynamicString as plain text: literal, data-model path, or nothing."""
        if isinstance(value, dict) and isinstance(value.get("path"), str):
            value = _pointer_get(self.data, value["path"])
        if value is None or isinstance(value, dict | list):
            return ""
        return _EMPHASIS.sub(r"\2", str(value))

    def render(self, cid: str, seen: frozenset[str] = frozenset()) -> list[str]:
        """Lines for component `cid` and its subtree."""
        comp = self.components.get(cid)
        if comp is None or cid in seen or len(seen) > MAX_DEPTH:
            return []
        seen = seen | {cid}
        kind = comp.get("component")
        kids = [self.render(ref, seen) for ref in child_refs(comp)]
        if kind == "Text":
            return self._text(comp)
        if kind == "Row":
            return _side_by_side([k for k in kids if k])
        if kind in ("Column", "List"):
            return self._column(comp, kids, seen)
        if kind == "Card":
            return _box(kids[0] if kids else [])
        if kind == "Divider":
            return [_HR]
        if kind == "Button":
            label = " ".join(line.strip() for k in kids for line in k)
            return [f"[ {label or 'button'} ]"]
        if kind == "Tabs":
            lines: list[str] = []
            for tab, kid in zip(comp.get("tabs") or [], kids, strict=False):
                lines += [f"▸ {self.text(tab.get('title') if isinstance(tab, dict) else '')}", *kid]
            return lines
        return self._leaf(comp, kids)

    def _text(self, comp: dict[str, Any]) -> list[str]:
        text = self.text(comp.get("text"))
        variant = comp.get("variant")
        lines = text.split("\n") if text else [""]
        if variant == "h1":
            lines.append("═" * max(display_width(line) for line in lines))
        return lines

    def _column(
        self, comp: dict[str, Any], kids: list[list[str]], seen: frozenset[str]
    ) -> list[str]:
        table = self._table(list(child_refs(comp)), seen)
        lines = table if table is not None else [line for kid in kids for line in kid]
        width = max((display_width(line) for line in lines if line != _HR), default=10)
        return ["─" * width if line == _HR else line for line in lines]

    def _table(self, refs: list[str], seen: frozenset[str]) -> list[str] | None:
        """Rows of one-line cells with equal counts (our compare template) as an aligned table."""
        rows: list[list[str] | None] = []
        for ref in refs:
            comp = self.components.get(ref, {})
            if comp.get("component") == "Divider":
                rows.append(None)
                continue
            if comp.get("component") != "Row":
                return None
            cells = [self.render(c, seen | {ref}) for c in child_refs(comp)]
            if any(len(cell) != 1 for cell in cells):
                return None
            rows.append([cell[0] for cell in cells])
        real = [r for r in rows if r is not None]
        if len(real) < 2 or len({len(r) for r in real}) != 1:
            return None
        widths = [max(display_width(r[j]) for r in real) for j in range(len(real[0]))]
        return [_HR if r is None else " │ ".join(map(_pad, r, widths)).rstrip() for r in rows]

    def _leaf(self, comp: dict[str, Any], kids: list[list[str]]) -> list[str]:
        kind = comp.get("component")
        label = self.text(comp.get("label") or comp.get("text") or comp.get("description"))
        if kind == "Image":
            return [f"[image{': ' + label if label else ''}]"]
        if kind == "CheckBox":
            return [f"[{'x' if self.text(comp.get('value')) in ('True', 'true') else ' '}] {label}"]
        if kind in ("TextField", "DateTimeInput", "Slider", "ChoicePicker"):
            return [f"{label or kind}: {self.text(comp.get('value')) or '…'}"]
        if kind in ("Icon", "Video", "AudioPlayer"):
            return [f"[{str(kind).lower()}]"]
        flat = [line for kid in kids for line in kid]
        return flat or ([label] if label else [])


def _side_by_side(blocks: list[list[str]], gap: str = "  ") -> list[str]:
    if not blocks:
        return []
    widths = [max((display_width(x) for x in b if x != _HR), default=0) for b in blocks]
    height = max(len(b) for b in blocks)
    lines = []
    for i in range(height):
        cells = []
        for block, width in zip(blocks, widths, strict=True):
            cell = block[i] if i < len(block) else ""
            cells.append("─" * width if cell == _HR else _pad(cell, width))
        lines.append(gap.join(cells).rstrip())
    return lines


def _box(lines: list[str]) -> list[str]:
    width = max((display_width(line) for line in lines if line != _HR), default=0)
    body = [
        "├" + "─" * (width + 2) + "┤" if line == _HR else f"│ {_pad(line, width)} │"
        for line in lines
    ]
    return ["╭" + "─" * (width + 2) + "╮", *body, "╰" + "─" * (width + 2) + "╯"]


def _messages(ui: Any) -> list[dict[str, Any]]:
    if isinstance(ui, list):
        return [m for m in ui if isinstance(m, dict)]
    if not isinstance(ui, dict):
        return []
    inner = ui.get("a2ui", ui)
    if isinstance(inner, dict) and "messages" in inner:
        inner = inner["messages"]
    if isinstance(inner, dict):
        inner = [inner]
    return [m for m in inner if isinstance(m, dict)] if isinstance(inner, list) else []


def _lark_text(ui: dict[str, Any]) -> str:
    """A Lark card payload as text (title and markdown), for completeness."""
    cards = ui.get("lark_cards") or [ui.get("lark_card")]
    parts = []
    for card in cards:
        if not isinstance(card, dict):
            continue
        title = (card.get("header") or {}).get("title", {}).get("content", "")
        body = [
            c.get("content", "")
            for c in (card.get("body") or {}).get("elements", [])
            if isinstance(c, dict)
        ]
        parts.append("\n".join(x for x in [title, *body] if x))
    return "\n\n".join(parts)


def render_text(ui: dict[str, Any]) -> str:
    """A ToolResult.ui payload ({"a2ui": {"messages": [...]}} or bare messages) as text."""
    if isinstance(ui, dict) and ("lark_card" in ui or "lark_cards" in ui):
        return _lark_text(ui)
    surfaces: dict[str, _Surface] = {}
    for msg in _messages(ui):
        for key, body in msg.items():
            if key == "version" or not isinstance(body, dict):
                continue
            sid = str(body.get("surfaceId", ""))
            if key == "deleteSurface":
                surfaces.pop(sid, None)
                continue
            surface = surfaces.setdefault(sid, _Surface())
            if key == "updateComponents":
                for comp in body.get("components") or []:
                    if isinstance(comp, dict) and isinstance(comp.get("id"), str):
                        surface.components[comp["id"]] = comp
            elif key == "updateDataModel":
                surface.set_data(body.get("path"), body.get("value"))
    rendered = ["\n".join(s.render("root")) for s in surfaces.values() if "root" in s.components]
    if rendered:
        return "\n\n".join(rendered)
    return json.dumps(ui, ensure_ascii=False)[:2000]
