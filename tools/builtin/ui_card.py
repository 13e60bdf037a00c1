"""ui_card: show structured data as a card — A2UI on web/CLI, Lark card JSON 2.0 in Lark."""

from __future__ import annotations

import asyncio
from typing import Any

from cards import a2ui_payload, lark_cards, lark_payload, parse_card
from cards.a2ui_validate import validate_messages
from cards.spec import KINDS, CardSpec, CardSpecError, item_count
from larkbot.context import RequestContext
from tools.base import BaseTool, ToolResult
from tools.runtime import ToolRuntime

_TEXT = {"type": "string"}
CARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Structured card data (recommended). Fields by kind are in skill 'ui-card'.",
    "properties": {
        "kind": {"type": "string", "enum": list(KINDS)},
        "title": _TEXT,
        "subtitle": _TEXT,
        "note": {"type": "string", "description": "small footer line, e.g. a source"},
        "color": {"type": "string", "description": "Lark header colour, e.g. blue, green, red"},
        "columns": {
            "type": "array",
            "items": _TEXT,
            "description": "compare: the header cells",
        },
        "rows": {
            "type": "array",
            "items": {"type": "array", "items": {"type": ["string", "number"]}},
            "description": "compare: one list of cells per row",
        },
        "items": {
            "type": "array",
            "description": "rank: best first",
            "items": {
                "type": "object",
                "properties": {"name": _TEXT, "value": _TEXT, "note": _TEXT},
                "required": ["name"],
            },
        },
        "stats": {
            "type": "array",
            "description": "stats: key figures",
            "items": {
                "type": "object",
                "properties": {"label": _TEXT, "value": _TEXT, "unit": _TEXT, "change": _TEXT},
                "required": ["label", "value"],
            },
        },
        "events": {
            "type": "array",
            "description": "timeline: in order",
            "items": {
                "type": "object",
                "properties": {"time": _TEXT, "title": _TEXT, "detail": _TEXT},
                "required": ["time", "title"],
            },
        },
    },
    "required": ["kind", "title"],
}


def summary(spec: CardSpec, cards: int = 1) -> str:
    """What the model hears back: the card is shown, so the answer need not repeat it."""
    split = f" over {cards} cards" if cards > 1 else ""
    return (
        f"Shown to the user as a {spec.kind} card{split}: {spec.title!r} "
        f"({item_count(spec)} entries). Do not repeat its content; add only a short comment."
    )


class UiCardTool(BaseTool):
    """ui_card: render compare / rank / stats / timeline data (or raw A2UI) for this channel."""

    name = "ui_card"
    description = (
        "Show structured data as a card instead of a text list: kind compare (table), rank "
        "(ordered list), stats (big numbers) or timeline. Pass `card`; read skill_read('ui-card') "
        "for the fields. `messages` (raw A2UI v0.9) is for custom layouts, web/CLI only."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "card": CARD_SCHEMA,
            "messages": {
                "type": "array",
                "items": {"type": "object"},
                "description": "advanced: hand-written A2UI v0.9 messages (not in Lark)",
            },
        },
    }
    fast_path = False

    def __init__(self, channel: str = "cli") -> None:
        self.channel = channel

    async def invoke(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        """Render for the interface of the call (one registry serves web and Lark)."""
        return await self._render(ctx.interface, **arguments)

    async def run(self, **kwargs: Any) -> ToolResult:
        """Render for the channel the tool was built for."""
        return await self._render(self.channel, **kwargs)

    async def _render(self, channel: str, **kwargs: Any) -> ToolResult:
        """Render `card` for the channel, or validate `messages`; problems come back as errors."""
        card, messages = kwargs.get("card"), kwargs.get("messages")
        if card is None and messages is None:
            return ToolResult("ui_card needs `card` (or `messages` on web/CLI)", is_error=True)
        if card is not None:
            return await asyncio.to_thread(self._render_card, card, channel)
        if channel == "lark":
            return ToolResult(
                "Lark cannot show raw A2UI `messages`; use `card` with kind "
                f"{' | '.join(KINDS)} (see skill_read('ui-card')).",
                is_error=True,
            )
        fixed, errors = await asyncio.to_thread(validate_messages, messages)
        if errors:
            return ToolResult(
                "Invalid A2UI messages; fix and call again:\n- " + "\n- ".join(errors),
                is_error=True,
            )
        sid = next((m["createSurface"]["surfaceId"] for m in fixed if "createSurface" in m), "")
        ui = {"a2ui": {"surfaceId": sid, "messages": fixed}}
        return ToolResult(
            f"Shown to the user as a custom card ({len(fixed)} A2UI messages).", ui=ui
        )

    def _render_card(self, card: Any, channel: str) -> ToolResult:
        try:
            spec = parse_card(card)
        except CardSpecError as err:
            return ToolResult(f"Invalid card: {err}", is_error=True)
        if channel == "lark":
            rendered = lark_cards(spec)
            return ToolResult(summary(spec, len(rendered)), ui=lark_payload(rendered))
        return ToolResult(summary(spec), ui=a2ui_payload(spec))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """One ui_card tool rendering for this runtime's interface."""
    return [UiCardTool(channel=rt.interface)]
