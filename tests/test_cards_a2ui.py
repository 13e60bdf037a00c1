"""A2UI templates (goldens, a2ui-core STRICT agreement) and validation of hand-written messages."""

from __future__ import annotations

from typing import Any

import pytest

from cards import a2ui_payload, parse_card
from cards.a2ui_catalog import CATALOG_ID, strict_catalog, strict_errors
from cards.a2ui_validate import validate_messages
from cards.ui_card_templates import a2ui_messages
from tests.cards_samples import SAMPLES, golden

CREATE = {"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": CATALOG_ID}}


def update(*components: dict[str, Any]) -> dict[str, Any]:
    """An updateComponents message for surface "s"."""
    return {
        "version": "v0.9",
        "updateComponents": {"surfaceId": "s", "components": list(components)},
    }


def text(cid: str, value: str = "x") -> dict[str, Any]:
    """A Text component."""
    return {"id": cid, "component": "Text", "text": value}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a2ui_golden(kind: str) -> None:
    payload = a2ui_payload(parse_card(SAMPLES[kind]))
    assert payload == golden(f"a2ui_{kind}", payload)
    messages = payload["a2ui"]["messages"]
    assert [next(k for k in m if k != "version") for m in messages] == [
        "createSurface",
        "updateComponents",
    ]
    assert all(m["version"] == "v0.9" for m in messages)


def test_a2ui_core_is_installed_for_the_strict_check() -> None:
    assert strict_catalog() is not None


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_templates_pass_our_validation_and_a2ui_core_strict(kind: str) -> None:
    messages = a2ui_messages(parse_card(SAMPLES[kind]))
    assert strict_errors(messages) == []
    fixed, errors = validate_messages(messages)
    assert errors == []
    assert fixed == messages


def test_big_templates_pass_strict_and_are_cut() -> None:
    compare = {**SAMPLES["compare"], "rows": [[f"r{i}", i, "x"] for i in range(500)]}
    rank = {"kind": "rank", "title": "R", "items": [{"name": f"n{i}"} for i in range(300)]}
    for data, more in ((compare, "400 more rows"), (rank, "200 more items")):
        messages = a2ui_messages(parse_card(data))
        assert strict_errors(messages) == []
        comps = messages[1]["updateComponents"]["components"]
        assert any(more in str(c.get("text")) for c in comps)


def test_rank_and_timeline_use_the_basic_catalog_only() -> None:
    comps = a2ui_messages(parse_card(SAMPLES["rank"]))[1]["updateComponents"]["components"]
    badges = [c for c in comps if c["id"].startswith("badge_")]
    assert [(b["text"], b["variant"]) for b in badges] == [(f"{n}.", "h4") for n in range(1, 5)]
    assert [c["component"] for c in comps].count("Card") == 1  # only the root
    timeline = a2ui_messages(parse_card(SAMPLES["timeline"]))[1]["updateComponents"]["components"]
    by_id = {c["id"]: c for c in timeline}
    assert by_id["timeline"]["children"] == ["event_0", "event_1", "event_2"]
    assert by_id["event_1"]["children"] == ["time_1", "event_main_1"]
    assert by_id["event_detail_1"]["text"] == "Invite-only\n200 testers"
    assert {c["component"] for c in timeline} <= {"Card", "Column", "List", "Row", "Text"}


def test_missing_root_is_an_error() -> None:
    _, errors = validate_messages([CREATE, update(text("a"))])
    assert any('id "root"' in e for e in errors)


def test_orphans_are_named() -> None:
    root = {"id": "root", "component": "Column", "children": ["a"]}
    _, errors = validate_messages([CREATE, update(root, text("a"), text("lost"), text("gone"))])
    assert len(errors) == 1
    assert "not reachable from root: lost, gone" in errors[0]


def test_a2ui_core_strict_agrees_about_the_orphan() -> None:
    root = {"id": "root", "component": "Column", "children": ["a"]}
    errors = strict_errors([CREATE, update(root, text("a"), text("lost"))])
    assert errors and "lost" in errors[0]


def test_two_envelope_keys_in_one_message() -> None:
    both = {"createSurface": CREATE["createSurface"], **update(text("root"))}
    _, errors = validate_messages([both])
    assert "exactly one of" in errors[0]
    assert "createSurface, updateComponents" in errors[0]


def test_literal_newlines_are_fixed_and_the_version_set() -> None:
    fixed, errors = validate_messages(
        [
            {"createSurface": CREATE["createSurface"]},
            {**update(text("root", "a\\nb")), "version": "v0.9.1"},  # a draft's version
        ]
    )
    assert errors == []
    assert fixed[1]["updateComponents"]["components"][0]["text"] == "a\nb"
    assert all(m["version"] == "v0.9" for m in fixed)


def test_missing_create_surface_is_added() -> None:
    fixed, errors = validate_messages([update(text("root"))])
    assert errors == []
    assert fixed[0]["createSurface"] == {"surfaceId": "s", "catalogId": CATALOG_ID}


def test_dangling_reference_and_duplicate_id() -> None:
    root = {"id": "root", "component": "Card", "child": "nope"}
    _, errors = validate_messages([CREATE, update(root)])
    assert any("missing components: nope" in e for e in errors)
    _, errors = validate_messages([CREATE, update(text("root"), text("root"))])
    assert any("used twice" in e for e in errors)


def test_unknown_component_rejected_by_strict_pass() -> None:
    _, errors = validate_messages([CREATE, update({"id": "root", "component": "Blink"})])
    assert errors and "Blink" in errors[0]


@pytest.mark.parametrize("bad", [None, [], "x", [1], [{"bogus": {}}]])
def test_malformed_input(bad: Any) -> None:
    fixed, errors = validate_messages(bad)
    assert fixed == [] and errors
