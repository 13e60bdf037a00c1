"""The structured card data shared by both channels: parsed from the model's `card` argument."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

KINDS = ("compare", "rank", "stats", "timeline")

# Lark header colours; A2UI ignores them.
COLORS = (
    "blue",
    "wathet",
    "turquoise",
    "green",
    "yellow",
    "orange",
    "red",
    "carmine",
    "violet",
    "purple",
    "indigo",
    "grey",
    "default",
)
DEFAULT_COLORS = {"compare": "blue", "rank": "orange", "stats": "green", "timeline": "purple"}

# Display caps, the same on both channels: what is past them is cut with "… N more".
MAX_SHOWN = {"compare": 100, "rank": 100, "stats": 60, "timeline": 60}
MAX_COLUMNS = 10
MAX_TITLE = 100
MAX_CELL = 200
MAX_TEXT = 300


def _clip(limit: int) -> Any:
    """A before-validator: numbers become text, text is cut at `limit` chars with an ellipsis."""

    def convert(value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value if value is None else str(value).lower()
        if isinstance(value, int | float):
            value = f"{value:g}" if isinstance(value, float) else str(value)
        if isinstance(value, str):
            value = value.replace("\\n", "\n").strip()
            return value if len(value) <= limit else value[: limit - 1] + "…"
        return value

    return BeforeValidator(convert)


Title = Annotated[str, _clip(MAX_TITLE), Field(min_length=1)]
Cell = Annotated[str, _clip(MAX_CELL)]
Text = Annotated[str, _clip(MAX_TEXT)]
OptText = Annotated[str | None, _clip(MAX_TEXT)]


class _Base(BaseModel):
    """Common fields of every card kind; unknown keys are mistakes the model should hear about."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: Title
    subtitle: OptText = None
    note: OptText = None
    color: str | None = None

    @property
    def header_color(self) -> str:
        """The Lark header colour: the requested one when valid, else the kind's default."""
        kind = str(getattr(self, "kind", "compare"))
        return self.color if self.color in COLORS else DEFAULT_COLORS[kind]


class CompareCard(_Base):
    """A table: `columns` are the header, `rows` the lines (first cell usually the item)."""

    kind: Literal["compare"]
    columns: list[Cell] = Field(min_length=1)
    rows: list[list[Cell]] = Field(min_length=1)

    def shown_columns(self) -> list[str]:
        """The header cut to MAX_COLUMNS."""
        return list(self.columns[:MAX_COLUMNS])

    def cells(self, row: list[str]) -> list[str]:
        """One row padded or cut to the header's width."""
        width = len(self.shown_columns())
        return (list(row) + [""] * width)[:width]


class RankItem(BaseModel):
    """One ranked entry."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Text = Field(min_length=1)
    value: OptText = None
    note: OptText = None


class RankCard(_Base):
    """An ordered list, best first; numbering and badges come from the template."""

    kind: Literal["rank"]
    items: list[RankItem] = Field(min_length=1)


class StatItem(BaseModel):
    """One big number."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    label: Text = Field(min_length=1)
    value: Text = Field(min_length=1)
    unit: OptText = None
    change: OptText = None

    @property
    def trend(self) -> str:
        """ "up", "down" or "" from the sign of `change`."""
        change = (self.change or "").strip()
        if re.match(r"^(\+|↑|▲)", change):
            return "up"
        if re.match(r"^(-|−|↓|▼)", change):
            return "down"
        return ""


class StatsCard(_Base):
    """Key figures shown as big numbers."""

    kind: Literal["stats"]
    stats: list[StatItem] = Field(min_length=1)


class TimelineEvent(BaseModel):
    """One dated step."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    time: Text = Field(min_length=1)
    title: Text = Field(min_length=1)
    detail: OptText = None


class TimelineCard(_Base):
    """Events in order, one section each."""

    kind: Literal["timeline"]
    events: list[TimelineEvent] = Field(min_length=1)


CardSpec = CompareCard | RankCard | StatsCard | TimelineCard
_ADAPTER: TypeAdapter[CardSpec] = TypeAdapter(
    Annotated[CardSpec, Field(discriminator="kind")]  # type: ignore[arg-type]
)


class CardSpecError(ValueError):
    """The `card` argument does not describe a valid card; the message says what to fix."""


def parse_card(data: Any) -> CardSpec:
    """Validate the model's `card` argument; raise CardSpecError with a short, fixable reason."""
    if not isinstance(data, dict):
        raise CardSpecError("card must be an object with a `kind` and its fields")
    if data.get("kind") not in KINDS:
        raise CardSpecError(f"card.kind must be one of {', '.join(KINDS)}")
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:8]:
            loc = ".".join(str(p) for p in err["loc"][1:]) or "card"
            problems.append(f"card.{loc}: {err['msg']}")
        raise CardSpecError("; ".join(problems)) from None


def item_count(spec: CardSpec) -> int:
    """How many rows/items/stats/events the card holds."""
    if isinstance(spec, CompareCard):
        return len(spec.rows)
    if isinstance(spec, RankCard):
        return len(spec.items)
    if isinstance(spec, StatsCard):
        return len(spec.stats)
    return len(spec.events)


def shown_count(spec: CardSpec) -> int:
    """How many of them any channel shows at most."""
    return min(item_count(spec), MAX_SHOWN[spec.kind])


UNIT_NAMES = {"compare": "rows", "rank": "items", "stats": "figures", "timeline": "events"}


def more_text(spec: CardSpec, hidden: int) -> str:
    """The deterministic cut note, e.g. "… 400 more rows not shown"."""
    return f"… {hidden} more {UNIT_NAMES[spec.kind]} not shown"
