"""Every A2UI template against the JSON Schema A2UI publishes (npm `@a2ui/web_core`, v0.9).

The schema files come from tests/node_modules (tests/package.json pins the package); the basic
catalog stands in for the `catalog.json` that server_to_client.json names beside itself.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from cards import parse_card
from cards.a2ui_validate import validate_messages
from cards.ui_card_templates import a2ui_messages
from tests.cards_samples import SAMPLES
from tests.npm_packages import npm_package

SPEC = "https://a2ui.org/specification/v0_9/"


@lru_cache(maxsize=1)
def validator() -> Draft202012Validator:
    """server_to_client.json with common_types.json and the basic catalog resolvable."""
    root = npm_package("@a2ui/web_core") / "src" / "v0_9" / "schemas"
    docs = {
        name: json.loads((root / name).read_text(encoding="utf-8"))
        for name in ("server_to_client.json", "common_types.json", "catalogs/basic/catalog.json")
    }
    resources = [(doc["$id"], Resource.from_contents(doc)) for doc in docs.values()]
    basic = Resource.from_contents(docs["catalogs/basic/catalog.json"])
    registry = Registry().with_resources([*resources, (SPEC + "catalog.json", basic)])
    return Draft202012Validator(docs["server_to_client.json"], registry=registry)


def schema_errors(messages: list[dict[str, Any]]) -> list[str]:
    """Each message's violations of the published schema."""
    return [
        f"message {i}: {err.message[:300]}"
        for i, message in enumerate(messages)
        for err in validator().iter_errors(message)
    ]


BIG = {
    "compare": {**SAMPLES["compare"], "rows": [[f"r{i}", i, "x"] for i in range(500)]},
    "rank": {"kind": "rank", "title": "R", "items": [{"name": f"n{i}"} for i in range(300)]},
    "timeline": {
        "kind": "timeline",
        "title": "T",
        "events": [{"time": f"{i}", "title": f"e{i}", "detail": "d"} for i in range(300)],
    },
}
CASES = {**SAMPLES, **{f"big_{k}": v for k, v in BIG.items()}}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_every_template_passes_the_published_schema(kind: str) -> None:
    assert schema_errors(a2ui_messages(parse_card(CASES[kind]))) == []


def test_hand_written_messages_as_fixed_pass_it_too() -> None:
    update = {
        "surfaceId": "s",
        "components": [{"id": "root", "component": "Text", "text": "a\\nb", "variant": "h2"}],
    }
    fixed, errors = validate_messages([{"updateComponents": update}])
    assert errors == [] and schema_errors(fixed) == []


def test_the_schema_refuses_what_larkbot_used_to_send() -> None:
    """Regression (#40): "v0.9.1", the rankBadge variant and a Timeline were ours alone."""
    messages = a2ui_messages(parse_card(SAMPLES["rank"]))
    assert schema_errors([{**messages[0], "version": "v0.9.1"}])
    update = messages[1]["updateComponents"]
    for extra in (
        {"id": "root", "component": "Text", "text": "1", "variant": "rankBadge"},
        {"id": "root", "component": "Timeline", "items": [{"time": "t", "title": "x"}]},
    ):
        bad = {**messages[1], "updateComponents": {**update, "components": [extra]}}
        assert schema_errors([bad]), extra
