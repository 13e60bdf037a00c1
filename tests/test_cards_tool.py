"""ui_card: per-channel rendering, `messages` validation, refusal in Lark, registration."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from cards import lark_cards_of, validate_lark_card
from cards.a2ui_catalog import CATALOG_ID
from tests.cards_samples import SAMPLES
from tools.base import ALL_INTERFACES
from tools.builtin.ui_card import UiCardTool, provide

ROOT_ONLY = [
    {"createSurface": {"surfaceId": "s", "catalogId": CATALOG_ID}},
    {
        "updateComponents": {
            "surfaceId": "s",
            "components": [{"id": "root", "component": "Text", "text": "a\\nb"}],
        }
    },
]


def test_attributes_and_provide() -> None:
    tool = provide(SimpleNamespace(interface="lark"))[0]  # type: ignore[arg-type]
    assert isinstance(tool, UiCardTool) and tool.channel == "lark"
    assert tool.name == "ui_card" and tool.fast_path is False and not tool.side_effect
    assert tool.interfaces == ALL_INTERFACES
    props = tool.openai_schema()["function"]["parameters"]["properties"]
    assert props["card"]["properties"]["kind"]["enum"] == ["compare", "rank", "stats", "timeline"]


async def test_lark_channel_returns_lark_cards() -> None:
    result = await UiCardTool(channel="lark").run(card=SAMPLES["compare"])
    assert not result.is_error
    assert result.ui is not None and set(result.ui) == {"lark_card"}
    assert validate_lark_card(result.ui["lark_card"]) == []
    assert "compare card" in result.content and "Do not repeat" in result.content
    assert "Redmi" not in result.content  # the model gets a summary, not the card


async def test_lark_split_returns_lark_cards_list() -> None:
    items = [{"name": "n" * 300, "note": "x" * 300} for _ in range(100)]
    result = await UiCardTool(channel="lark").run(
        card={"kind": "rank", "title": "T", "items": items}
    )
    cards = lark_cards_of(result.ui)
    assert result.ui is not None and set(result.ui) == {"lark_cards"} and len(cards) > 1
    assert all(validate_lark_card(c) == [] for c in cards)
    assert f"over {len(cards)} cards" in result.content


async def test_web_and_cli_return_a2ui() -> None:
    for channel in ("web", "cli"):
        result = await UiCardTool(channel=channel).run(card=SAMPLES["rank"])
        assert result.ui is not None
        messages = result.ui["a2ui"]["messages"]
        assert result.ui["a2ui"]["surfaceId"] == messages[0]["createSurface"]["surfaceId"]


async def test_invalid_card_is_an_error_the_model_can_fix() -> None:
    tool = UiCardTool(channel="web")
    result = await tool.run(card={"kind": "rank", "title": "T"})
    assert result.is_error and "card.items" in result.content
    result = await tool.run(card={"kind": "pie", "title": "T"})
    assert result.is_error and "compare, rank, stats, timeline" in result.content
    result = await tool.run()
    assert result.is_error


async def test_messages_validated_on_web() -> None:
    result = await UiCardTool(channel="web").run(messages=ROOT_ONLY)
    assert not result.is_error and result.ui is not None
    comps: list[dict[str, Any]] = result.ui["a2ui"]["messages"][1]["updateComponents"]["components"]
    assert comps[0]["text"] == "a\nb"
    orphan = [
        ROOT_ONLY[0],
        {
            "updateComponents": {
                "surfaceId": "s",
                "components": [
                    {"id": "root", "component": "Text", "text": "x"},
                    {"id": "stray", "component": "Text", "text": "y"},
                ],
            }
        },
    ]
    result = await UiCardTool(channel="cli").run(messages=orphan)
    assert result.is_error and "stray" in result.content and result.ui is None


async def test_messages_refused_in_lark_with_a_hint() -> None:
    result = await UiCardTool(channel="lark").run(messages=ROOT_ONLY)
    assert result.is_error and "use `card`" in result.content and result.ui is None
