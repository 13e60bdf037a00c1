"""render_text: A2UI as terminal text, tree rebuilt from the adjacency list."""

from __future__ import annotations

from typing import Any

import pytest

from cards import a2ui_payload, parse_card
from cards.a2ui_text import display_width, render_text
from tests.cards_samples import SAMPLES


def test_compare_renders_as_an_aligned_boxed_table() -> None:
    out = render_text(a2ui_payload(parse_card(SAMPLES["compare"])))
    assert out.splitlines() == [
        "╭─────────────────────────────────╮",
        "│ Phones under 4000 CNY           │",
        "│ 2024-06                         │",
        "│ Model        │ Price │ Battery  │",
        "│ ─────────────────────────────── │",
        "│ Redmi K70    │ 2499  │ 5000 mAh │",
        "│ ─────────────────────────────── │",
        "│ 华为 nova 12 │ 2999  │ 4600 mAh │",
        "│ ─────────────────────────────── │",
        "│ a|b          │ 1.5   │          │",
        "│ Source: JD.com                  │",
        "╰─────────────────────────────────╯",
    ]


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_box_lines_have_equal_display_width(kind: str) -> None:
    lines = render_text(a2ui_payload(parse_card(SAMPLES[kind]))).splitlines()
    assert len({display_width(line) for line in lines}) == 1
    assert lines[0].startswith("╭") and lines[-1].startswith("╰")


def test_rank_timeline_and_stats() -> None:
    rank = render_text(a2ui_payload(parse_card(SAMPLES["rank"])))
    assert "│ 1.  Django  80k ★" in rank and "│ 4.  Litestar" in rank
    assert "**" not in rank
    timeline = render_text(a2ui_payload(parse_card(SAMPLES["timeline"])))
    assert "│ 06-10  Beta" in timeline and "│        Invite-only" in timeline
    assert "│        200 testers" in timeline and "│ 06-20  GA" in timeline
    stats = render_text(a2ui_payload(parse_card(SAMPLES["stats"])))
    assert "12,480" in stats and "3.4 M CNY" in stats and "-1.1%" in stats


def test_data_model_paths_and_bare_message_lists() -> None:
    messages = [
        {"createSurface": {"surfaceId": "s", "catalogId": "c"}},
        {
            "updateComponents": {
                "surfaceId": "s",
                "components": [{"id": "root", "component": "Text", "text": {"path": "/user/name"}}],
            }
        },
        {"updateDataModel": {"surfaceId": "s", "path": "/user", "value": {"name": "Ada"}}},
    ]
    assert render_text({"messages": messages}) == "Ada"
    assert render_text(messages) == "Ada"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "ui",
    [
        {},
        {"a2ui": None},
        {
            "a2ui": {
                "messages": [
                    {
                        "updateComponents": {
                            "surfaceId": "s",
                            "components": [
                                {"id": "root", "component": "Column", "children": ["a"]},
                                {"id": "a", "component": "Column", "children": ["root"]},
                            ],
                        }
                    }
                ]
            }
        },
    ],
)
def test_odd_input_never_raises(ui: Any) -> None:
    assert isinstance(render_text(ui), str)


def test_lark_payload_falls_back_to_text() -> None:
    ui = {
        "lark_card": {
            "header": {"title": {"content": "T"}},
            "body": {"elements": [{"tag": "markdown", "content": "hi"}]},
        }
    }
    assert render_text(ui) == "T\nhi"
