"""The four card kinds as Lark card JSON 2.0: compare → markdown table, rank → numbered list,
stats → column_set with big numbers, timeline → sections. Pure functions; always valid cards."""

from __future__ import annotations

from typing import Any

from cards.lark_budget import MAX_CARDS, base_card, grey_note, paginate, part_label
from cards.spec import (
    CardSpec,
    CompareCard,
    RankCard,
    StatItem,
    StatsCard,
    TimelineCard,
    item_count,
    more_text,
    shown_count,
)

STATS_PER_ROW = 3
MEDALS = {1: "🥇 ", 2: "🥈 ", 3: "🥉 "}
TREND_COLORS = {"up": "green", "down": "red"}


def _inline(text: str) -> str:
    """One line of markdown: newlines become <br> so a list item or section stays whole."""
    return text.replace("\r", "").replace("\n", "<br>")


def _cell(text: str) -> str:
    """A table cell: pipes escaped, no line breaks."""
    return (
        text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", " ") or " "
    )


def compare_elements(spec: CompareCard, start: int, end: int) -> list[dict[str, Any]]:
    """Rows [start, end) as one GFM table in one markdown component."""
    header = spec.shown_columns()
    lines = [
        "| " + " | ".join(_cell(c) for c in header) + " |",
        "|" + "|".join(" --- " for _ in header) + "|",
    ]
    lines += [
        "| " + " | ".join(_cell(c) for c in spec.cells(r)) + " |" for r in spec.rows[start:end]
    ]
    return [{"tag": "markdown", "content": "\n".join(lines)}]


def rank_elements(spec: RankCard, start: int, end: int) -> list[dict[str, Any]]:
    """Items [start, end) as an ordered list numbered from start + 1, medals for the top three."""
    lines = []
    for n, item in enumerate(spec.items[start:end], start=start + 1):
        line = f"{n}. {MEDALS.get(n, '')}**{_inline(item.name)}**"
        if item.value:
            line += f" · {_inline(item.value)}"
        if item.note:
            line += f" <font color='grey'>{_inline(item.note)}</font>"
        lines.append(line)
    return [{"tag": "markdown", "content": "\n".join(lines)}]


def _stat_column(stat: StatItem) -> dict[str, Any]:
    """One figure: the big number, its label, and the change coloured by its direction."""
    value = _inline(stat.value) + (f" {_inline(stat.unit)}" if stat.unit else "")
    elements: list[dict[str, Any]] = [
        {"tag": "markdown", "content": f"## {value}", "text_align": "center"},
        {
            "tag": "markdown",
            "content": f"<font color='grey'>{_inline(stat.label)}</font>",
            "text_align": "center",
            "text_size": "notation",
        },
    ]
    if stat.change:
        color = TREND_COLORS.get(stat.trend, "grey")
        elements.append(
            {
                "tag": "markdown",
                "content": f"<font color='{color}'>{_inline(stat.change)}</font>",
                "text_align": "center",
                "text_size": "notation",
            }
        )
    return {
        "tag": "column",
        "width": "weighted",
        "weight": 1,
        "background_style": "grey-50",
        "padding": "12px",
        "vertical_spacing": "2px",
        "elements": elements,
    }


def stats_elements(spec: StatsCard, start: int, end: int) -> list[dict[str, Any]]:
    """Figures [start, end) as rows of up to three columns."""
    shown = spec.stats[start:end]
    rows = [shown[i : i + STATS_PER_ROW] for i in range(0, len(shown), STATS_PER_ROW)]
    return [
        {
            "tag": "column_set",
            "flex_mode": "none",
            "horizontal_spacing": "12px",
            "columns": [_stat_column(s) for s in row],
        }
        for row in rows
    ]


def timeline_elements(spec: TimelineCard, start: int, end: int) -> list[dict[str, Any]]:
    """Events [start, end), one markdown section each: time and title, then the detail."""
    elements = []
    for event in spec.events[start:end]:
        content = f"**{_inline(event.time)}** · {_inline(event.title)}"
        if event.detail:
            content += f"<br><font color='grey'>{_inline(event.detail)}</font>"
        elements.append({"tag": "markdown", "content": content})
    return elements


def body_elements(spec: CardSpec, start: int, end: int) -> list[dict[str, Any]]:
    """The kind's elements for items [start, end)."""
    if isinstance(spec, CompareCard):
        return compare_elements(spec, start, end)
    if isinstance(spec, RankCard):
        return rank_elements(spec, start, end)
    if isinstance(spec, StatsCard):
        return stats_elements(spec, start, end)
    return timeline_elements(spec, start, end)


def lark_cards(spec: CardSpec, max_cards: int = MAX_CARDS) -> list[dict[str, Any]]:
    """The card as one or more valid Lark cards (split and cut by the budgeted compiler)."""

    total = item_count(spec)

    def build(start: int, end: int, closing: bool, part: int, parts: int) -> dict[str, Any]:
        elements = body_elements(spec, start, end)
        if closing and end < total:
            elements.append(grey_note(more_text(spec, total - end)))
        if closing and spec.note:
            elements.append(grey_note(spec.note))
        title = spec.title + part_label(part, parts)
        return base_card(title, elements, spec.header_color, spec.subtitle)

    return paginate(shown_count(spec), build, max_cards)


def lark_card(spec: CardSpec) -> dict[str, Any]:
    """A single valid card (rows past what one card holds are cut with "… N more")."""
    return lark_cards(spec, max_cards=1)[0]
