"""Lark card templates and the budgeted compiler: goldens, validity, limits, degradation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cards import lark_cards_of, lark_payload, markdown_card, markdown_cards, parse_card
from cards.lark_budget import base_card
from cards.lark_card_templates import lark_card, lark_cards
from cards.lark_limits import (
    COMPONENT_TAGS,
    MAX_CARD_BYTES,
    MAX_CARD_TABLES,
    PART_TAGS,
    card_bytes,
    count_card_tables,
    count_elements,
    count_md_tables,
    validate_lark_card,
)
from tests.cards_samples import SAMPLES, golden


def assert_valid(card: dict[str, Any]) -> None:
    """Parses, schema 2.0, 2.0 tags only, within every limit."""
    again = json.loads(json.dumps(card, ensure_ascii=False))
    assert again == card
    assert card["schema"] == "2.0"
    tags = set()
    stack: list[Any] = [card["body"]]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "tag" in node:
                tags.add(node["tag"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    assert tags <= COMPONENT_TAGS | PART_TAGS
    assert not tags & {"note", "action"}
    assert card_bytes(card) <= MAX_CARD_BYTES
    assert validate_lark_card(card) == []


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_lark_golden(kind: str) -> None:
    cards = lark_cards(parse_card(SAMPLES[kind]))
    assert len(cards) == 1
    assert_valid(cards[0])
    assert cards[0] == golden(f"lark_{kind}", cards[0])


def test_compare_is_a_markdown_table_with_escaped_pipes() -> None:
    card = lark_card(parse_card(SAMPLES["compare"]))
    content = card["body"]["elements"][0]["content"]
    assert content.splitlines()[:2] == ["| Model | Price | Battery |", "| --- | --- | --- |"]
    assert "| a\\|b | 1.5 |   |" in content
    assert count_md_tables(content) == 1
    assert card["header"]["template"] == "blue"
    assert card["header"]["subtitle"]["content"] == "2024-06"


def test_stats_are_big_numbers_in_column_sets() -> None:
    card = lark_card(parse_card(SAMPLES["stats"]))
    sets = [e for e in card["body"]["elements"] if e["tag"] == "column_set"]
    assert [len(s["columns"]) for s in sets] == [3, 1]
    first = sets[0]["columns"][0]["elements"]
    assert first[0]["content"] == "## 12,480"
    assert "green" in first[2]["content"]
    assert "red" in sets[0]["columns"][1]["elements"][2]["content"]
    assert card["header"]["template"] == "indigo"


def test_rank_numbers_and_timeline_sections() -> None:
    rank = lark_card(parse_card(SAMPLES["rank"]))["body"]["elements"][0]["content"]
    assert rank.splitlines()[0] == "1. 🥇 **Django** · 80k ★"
    assert rank.splitlines()[3] == "4. **Litestar**"
    timeline = lark_card(parse_card(SAMPLES["timeline"]))["body"]["elements"]
    assert len(timeline) == 3
    assert (
        timeline[1]["content"]
        == "**06-10** · Beta<br><font color='grey'>Invite-only<br>200 testers</font>"
    )


def test_compare_with_500_rows_is_cut_deterministically() -> None:
    data = {**SAMPLES["compare"], "rows": [[f"Phone {i}", i, "x"] for i in range(500)]}
    cards = lark_cards(parse_card(data))
    for card in cards:
        assert_valid(card)
    last = cards[-1]["body"]["elements"]
    assert any("… 400 more rows not shown" in e["content"] for e in last)
    assert cards == lark_cards(parse_card(data))  # deterministic


def test_rank_with_300_long_items_splits_into_valid_cards() -> None:
    items = [{"name": f"名字 {i} " * 10, "value": i, "note": "注" * 290} for i in range(300)]
    cards = lark_cards(parse_card({"kind": "rank", "title": "Big", "items": items}))
    assert len(cards) > 1
    for card in cards:
        assert_valid(card)
    titles = [c["header"]["title"]["content"] for c in cards]
    assert titles == [f"Big ({i}/{len(cards)})" for i in range(1, len(cards) + 1)]
    second = cards[1]["body"]["elements"][0]["content"]
    first_number = int(second.split(".", 1)[0])  # numbering continues across cards
    assert first_number == cards[0]["body"]["elements"][0]["content"].count("\n") + 2
    assert "more items not shown" in json.dumps(cards[-1], ensure_ascii=False)


def test_many_stats_stay_under_200_elements() -> None:
    stats = [{"label": f"L{i}", "value": i, "change": "+1"} for i in range(60)]
    cards = lark_cards(parse_card({"kind": "stats", "title": "S", "stats": stats}))
    assert len(cards) == 2
    assert all(count_elements(c) <= 200 for c in cards)
    for card in cards:
        assert_valid(card)


def test_single_card_mode_cuts_instead_of_splitting() -> None:
    items = [{"name": "x" * 300, "note": "y" * 300} for _ in range(100)]
    card = lark_card(parse_card({"kind": "rank", "title": "One", "items": items}))
    assert_valid(card)
    assert "more items not shown" in card["body"]["elements"][-1]["content"]


text_st = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=400).filter(
    lambda t: t.strip()
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["compare", "rank", "stats", "timeline"]),
    texts=st.lists(text_st, min_size=1, max_size=150),
    width=st.integers(1, 14),
)
def test_any_spec_gives_valid_cards(kind: str, texts: list[str], width: int) -> None:
    n = len(texts)
    data: dict[str, Any] = {"kind": kind, "title": texts[0], "note": texts[-1]}
    if kind == "compare":
        data |= {"columns": texts[:width], "rows": [texts[i : i + width] for i in range(n)]}
    elif kind == "rank":
        data["items"] = [{"name": t, "value": t, "note": t} for t in texts]
    elif kind == "stats":
        data["stats"] = [{"label": t, "value": t, "unit": t, "change": t} for t in texts]
    else:
        data["events"] = [{"time": t, "title": t, "detail": t} for t in texts]
    spec = parse_card(data)
    for card in lark_cards(spec):
        assert validate_lark_card(card) == []


@pytest.mark.parametrize(
    ("card", "needle"),
    [
        ({"schema": "1.0", "body": {"elements": []}}, 'schema must be "2.0"'),
        ({"schema": "2.0", "elements": [], "body": {"elements": []}}, "unknown top-level"),
        ({"schema": "2.0", "body": {"elements": [{"tag": "note"}]}}, "JSON 1.0 component"),
        ({"schema": "2.0", "body": {"elements": [{"tag": "action"}]}}, "JSON 1.0 component"),
        ({"schema": "2.0", "body": {"elements": [{"tag": "blink"}]}}, "unknown component"),
        ({"schema": "2.0", "body": {"elements": [{"tag": "hr"}] * 201}}, "over the limit of 200"),
        ({"schema": "2.0", "body": {"elements": [{"tag": "table"}] * 6}}, "6 table components"),
        (
            {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "x" * 31000}]}},
            "byte limit",
        ),
        (
            {
                "schema": "2.0",
                "body": {
                    "elements": [
                        {
                            "tag": "column_set",
                            "columns": [{"tag": "column", "elements": [{"tag": "table"}]}],
                        }
                    ]
                },
            },
            "directly in body.elements",
        ),
        (
            {
                "schema": "2.0",
                "body": {"elements": [{"tag": "markdown", "content": "|a|\n|-|\n\n" * 5}]},
            },
            "more than 4 tables",
        ),
        (
            {
                "schema": "2.0",
                "header": {"title": {"tag": "plain_text", "content": "t"}, "template": "pink"},
                "body": {"elements": []},
            },
            "not a card colour",
        ),
        (
            {
                "schema": "2.0",
                "body": {
                    "elements": [{"tag": "hr", "element_id": "a"}, {"tag": "hr", "element_id": "a"}]
                },
            },
            "used twice",
        ),
    ],
)
def test_validator_catches(card: dict[str, Any], needle: str) -> None:
    errors = validate_lark_card(card)
    assert any(needle in e for e in errors), errors


def test_markdown_cards_split_long_text_and_keep_it_all() -> None:
    sections = [
        f"## Part {i}\n\n" + "\n".join(f"line {i}.{j} 内容" for j in range(400)) for i in range(6)
    ]
    text = "\n\n".join(sections)
    cards = markdown_cards(text, title="Answer")
    assert len(cards) > 1
    for card in cards:
        assert_valid(card)
    joined = "\n".join(c["body"]["elements"][0]["content"] for c in cards)
    for i in range(6):
        assert f"line {i}.399 内容" in joined
    assert cards[0]["header"]["title"]["content"] == f"Answer (1/{len(cards)})"


def test_markdown_extra_tables_become_code_blocks() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    card = markdown_card("\n\n".join([table] * 6))
    assert_valid(card)
    content = card["body"]["elements"][0]["content"]
    assert count_md_tables(content) == MAX_CARD_TABLES == 3
    assert content.count("```text") == 3
    assert "header" not in card


def test_table_limit_is_card_wide() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    two = {"tag": "markdown", "content": f"{table}\n\n{table}"}
    panel = {"tag": "collapsible_panel", "elements": [dict(two)]}
    card = base_card("Tables", [dict(two), panel, dict(two)])
    assert_valid(card)
    assert count_card_tables(card) == MAX_CARD_TABLES
    first, nested, last = card["body"]["elements"]
    assert count_md_tables(first["content"]) == 2  # the budget is spent in reading order
    assert count_md_tables(nested["elements"][0]["content"]) == 1
    assert count_md_tables(last["content"]) == 0 and last["content"].count("```text") == 2
    too_many = {"schema": "2.0", "body": {"elements": [dict(two), dict(two)]}}
    assert any("card-wide" in e for e in validate_lark_card(too_many))


def test_markdown_code_fence_split_is_refenced() -> None:
    code = "```python\n" + "\n".join(f"print({i})" for i in range(6000)) + "\n```"
    cards = markdown_cards(code)
    assert len(cards) > 1
    for card in cards:
        assert_valid(card)
        content = card["body"]["elements"][0]["content"]
        assert content.startswith("```python") and content.rstrip().endswith("```")


def test_markdown_card_cuts_with_a_note() -> None:
    card = markdown_card("\n\n".join("word " * 500 for _ in range(40)))
    assert_valid(card)
    assert "more characters not shown" in card["body"]["elements"][-1]["content"]


def test_payload_shapes() -> None:
    one, two = {"schema": "2.0", "n": 1}, {"schema": "2.0", "n": 2}
    assert lark_payload([one]) == {"lark_card": one}
    assert lark_payload([one, two]) == {"lark_cards": [one, two]}
    assert lark_cards_of(lark_payload([one, two])) == [one, two]
    assert lark_cards_of({"lark_card": one}) == [one]
    assert lark_cards_of({"a2ui": {}}) == []
    assert lark_cards_of(None) == []
