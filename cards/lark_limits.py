"""Lark card JSON 2.0 limits and `validate_lark_card`, which every card passes before sending."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

MAX_CARD_BYTES = 30 * 1024  # documented limit (230025 / 200860)
BUDGET_BYTES = 28 * 1024  # what the compiler aims for: room for transport differences
MAX_ELEMENTS = 200  # error 11310
MAX_TABLES = 5  # `table` components per card
MAX_MD_TABLES = 4  # GFM tables per markdown component
# Tables in the whole card: markdown tables and `table` components together. Lark's real limit
# is undocumented (six small markdown tables in one card drew 230099 / ErrCode 11310 "card
# table number over limit"); peers that survive it count markdown tables card-wide and keep
# three (larksuite/openclaw-lark FEISHU_CARD_TABLE_LIMIT). Tables past it become code blocks.
MAX_CARD_TABLES = 3

TOP_LEVEL_KEYS = frozenset({"schema", "config", "header", "body", "card_link"})
COMPONENT_TAGS = frozenset(
    {
        # containers
        "column_set",
        "column",
        "form",
        "interactive_container",
        "collapsible_panel",
        # display
        "markdown",
        "div",
        "img",
        "img_combination",
        "person",
        "person_list",
        "chart",
        "table",
        "hr",
        # interactive
        "button",
        "overflow",
        "input",
        "select_static",
        "multi_select_static",
        "select_person",
        "multi_select_person",
        "date_picker",
        "picker_time",
        "picker_datetime",
        "select_img",
        "checker",
    }
)
# Tagged objects that are parts of a component rather than components.
PART_TAGS = frozenset({"plain_text", "lark_md", "standard_icon", "custom_icon", "text_tag"})
V1_ONLY_TAGS = frozenset({"note", "action"})
NO_NESTING = frozenset({"form", "table"})  # allowed only directly in body.elements
_COLORS = "blue wathet turquoise green yellow orange red carmine violet purple indigo grey"
HEADER_TEMPLATES = frozenset(f"{_COLORS} default".split())
_ELEMENT_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,19}$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_DELIMITER_CELL = re.compile(r"^\s*:?-+:?\s*$")


def card_json(card: dict[str, Any]) -> str:
    """The compact JSON text to send as a message's `content` (what the size budget measures)."""
    return json.dumps(card, ensure_ascii=False, separators=(",", ":"))


def card_bytes(card: dict[str, Any]) -> int:
    """Size of the card as sent, in UTF-8 bytes."""
    return len(card_json(card).encode("utf-8"))


def _walk(node: Any, depth: int = 0) -> Iterator[tuple[dict[str, Any], int]]:
    """Every tagged dict under `node` with its nesting depth (0 = directly in body.elements)."""
    if isinstance(node, dict):
        tagged = "tag" in node
        if tagged:
            yield node, depth
        for value in node.values():
            yield from _walk(value, depth + 1 if tagged else depth)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, depth)


def components(card: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
    """The card's body components (no text parts), with nesting depth."""
    body = card.get("body") if isinstance(card.get("body"), dict) else {}
    found = _walk(body.get("elements", []) if isinstance(body, dict) else [])
    return [(c, d) for c, d in found if c.get("tag") not in PART_TAGS]


def count_elements(card: dict[str, Any]) -> int:
    """Components in the body, counted conservatively (columns included)."""
    return len(components(card))


def is_delimiter_row(line: str) -> bool:
    """True for a GFM table delimiter row such as `|---|:--:|`."""
    if "|" not in line:
        return False
    cells = line.strip().strip("|").split("|")
    return all(_DELIMITER_CELL.match(cell) for cell in cells)


def count_md_tables(markdown: str) -> int:
    """GFM tables in a markdown text (a delimiter row under a line with a pipe, outside fences)."""
    count, in_fence, previous = 0, False, ""
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and "|" in previous and "|" in line and is_delimiter_row(line):
            count += 1
        previous = "" if in_fence else line
    return count


def count_card_tables(card: dict[str, Any]) -> int:
    """Tables the card shows: `table` components plus the GFM tables of its markdown."""
    total = 0
    for comp, _ in components(card):
        if comp.get("tag") == "table":
            total += 1
        elif comp.get("tag") == "markdown" and isinstance(comp.get("content"), str):
            total += count_md_tables(comp["content"])
    return total


def _check_header(header: Any) -> list[str]:
    if header is None:
        return []
    if not isinstance(header, dict):
        return ["header must be an object"]
    errors = []
    title = header.get("title")
    if not (isinstance(title, dict) and title.get("tag") in {"plain_text", "lark_md"}):
        errors.append("header.title must be a plain_text or lark_md object")
    if "template" in header and header["template"] not in HEADER_TEMPLATES:
        errors.append(f"header.template {header['template']!r} is not a card colour")
    return errors


def _check_component(comp: dict[str, Any], depth: int, seen_ids: set[str]) -> list[str]:
    tag = comp.get("tag")
    if tag in V1_ONLY_TAGS:
        return [f"`{tag}` is a JSON 1.0 component, not allowed in schema 2.0"]
    if tag not in COMPONENT_TAGS:
        return [f"unknown component tag {tag!r}"]
    errors = []
    if tag in NO_NESTING and depth > 0:
        errors.append(f"`{tag}` may only sit directly in body.elements")
    if tag == "markdown":
        content = comp.get("content")
        if not isinstance(content, str):
            errors.append("markdown.content must be a string")
        elif count_md_tables(content) > MAX_MD_TABLES:
            errors.append(f"a markdown component holds more than {MAX_MD_TABLES} tables")
    element_id = comp.get("element_id")
    if element_id is not None:
        if not (isinstance(element_id, str) and _ELEMENT_ID.match(element_id)):
            errors.append(f"element_id {element_id!r} is not a letter then ≤19 letters/digits/_")
        elif element_id in seen_ids:
            errors.append(f"element_id {element_id!r} is used twice")
        else:
            seen_ids.add(element_id)
    return errors


def validate_lark_card(card: Any) -> list[str]:
    """Every reason Lark would reject this card (schema 2.0, 2.0 tags only, limits); [] if none."""
    if not isinstance(card, dict):
        return ["card must be a JSON object"]
    try:
        size = card_bytes(card)
    except (TypeError, ValueError) as exc:
        return [f"card is not JSON-serialisable: {exc}"]
    errors = []
    if card.get("schema") != "2.0":
        errors.append('schema must be "2.0"')
    errors += [f"unknown top-level field {k!r}" for k in sorted(set(card) - TOP_LEVEL_KEYS)]
    errors += _check_header(card.get("header"))
    body = card.get("body")
    if not (isinstance(body, dict) and isinstance(body.get("elements"), list)):
        errors.append("body.elements must be a list")
    comps = components(card)
    seen_ids: set[str] = set()
    for comp, depth in comps:
        errors += _check_component(comp, depth, seen_ids)
    if size > MAX_CARD_BYTES:
        errors.append(f"card is {size} bytes, over the {MAX_CARD_BYTES}-byte limit")
    if len(comps) > MAX_ELEMENTS:
        errors.append(f"card has {len(comps)} components, over the limit of {MAX_ELEMENTS}")
    tables = sum(1 for comp, _ in comps if comp.get("tag") == "table")
    if tables > MAX_TABLES:
        errors.append(f"card has {tables} table components, over the limit of {MAX_TABLES}")
    shown = count_card_tables(card)
    if shown > MAX_CARD_TABLES:
        errors.append(f"card shows {shown} tables, over the card-wide limit of {MAX_CARD_TABLES}")
    return errors


def fits(card: dict[str, Any], budget: int = BUDGET_BYTES) -> bool:
    """True when the card is valid and within the compiler's byte budget."""
    return card_bytes(card) <= budget and not validate_lark_card(card)
