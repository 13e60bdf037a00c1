"""CardKit state for FakeLark: card entities, their elements' streamed text and sequences.

Rules enforced like Lark's docs say (see /work/shared/reference/lark-platform.md §3.7):
`sequence` must strictly increase across all operations on one card (else code 300317); an
operation whose `uuid` this card already saw succeeds without being applied again;
element content can only be streamed while `config.streaming_mode` is true (code 300309 here);
a card entity can be sent in a message only once. Other error codes are the fake's own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


class ApiError(Exception):
    """A call the real platform would refuse: (code, msg) for the JSON body."""

    def __init__(
        self,
        code: int,
        msg: str,
        headers: dict[str, str] | None = None,
        error: dict[str, Any] | None = None,  # the body's `error` (e.g. permission_violations)
    ) -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.headers = headers or {}
        self.error = error


@dataclass
class FakeCard:
    """One card entity: its current JSON, element texts, every op and sequence seen."""

    card_id: str
    card: dict[str, Any]
    elements: dict[str, str] = field(default_factory=dict)  # element_id -> current text
    element_history: dict[str, list[str]] = field(default_factory=dict)  # every streamed text
    sequences: list[int] = field(default_factory=list)
    ops: list[tuple[str, int]] = field(default_factory=list)  # ("content"|"settings"|"update", seq)
    settings_updates: list[dict[str, Any]] = field(default_factory=list)
    streaming_mode: bool = False
    sent_message_id: str = ""

    def load(self, card: dict[str, Any]) -> None:
        """(Re)load the card JSON: elements with an element_id and the streaming flag."""
        self.card = card
        config = card.get("config")
        self.streaming_mode = bool(isinstance(config, dict) and config.get("streaming_mode"))
        self.elements = {}
        _collect_elements(card, self.elements)

    def check_sequence(self, op: str, sequence: Any) -> None:
        """Lark: an int32 >= 1, strictly greater than every earlier op's sequence on this card."""
        if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 1:
            raise ApiError(99992402, "sequence must be an integer >= 1")
        if self.sequences and sequence <= self.sequences[-1]:
            raise ApiError(300317, f"sequence {sequence} not greater than {self.sequences[-1]}")
        self.sequences.append(sequence)
        self.ops.append((op, sequence))


MAX_TABLES = 4  # Lark: a markdown component renders at most 4 tables (error 11310 otherwise)
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_PARTS = frozenset({"plain_text", "lark_md", "standard_icon", "custom_icon", "text_tag"})
BUILD_FAILED = (
    "Failed to create card content, ext=ErrCode: {sub}; ErrMsg: {why}; ErrorValue: {what}; "
)


def md_tables(text: str) -> int:
    """GFM tables in a markdown text (delimiter rows outside code fences)."""
    in_code, tables = False, 0
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        elif not in_code and _DELIMITER.match(line):
            tables += 1
    return tables


def too_many_tables(node: Any) -> bool:
    """True when a markdown component (or streamed text) holds more tables than Lark renders."""
    if isinstance(node, str):
        return md_tables(node) > MAX_TABLES
    if isinstance(node, dict):
        if node.get("tag") == "markdown" and too_many_tables(node.get("content") or ""):
            return True
        return any(too_many_tables(v) for v in node.values() if isinstance(v, dict | list))
    if isinstance(node, list):
        return any(too_many_tables(v) for v in node)
    return False


def _components(node: Any, out: list[dict[str, Any]]) -> None:
    if isinstance(node, list):
        for item in node:
            _components(item, out)
    elif isinstance(node, dict):
        if isinstance(node.get("tag"), str) and node["tag"] not in _PARTS:
            out.append(node)
        for value in node.values():
            _components(value, out)


@dataclass
class CardRules:
    """What the fake Lark refuses in a card, card-wide (tests make these stricter).

    `max_tables`: markdown tables plus `table` components in the whole card (real Lark refused
    six small markdown tables with 230099 / ErrCode 11310); `max_elements`: components in the
    body; `max_bytes`: the card JSON as sent; `refuse_all`: no card JSON is accepted at all.
    """

    max_tables: int = 5
    max_elements: int = 200
    max_bytes: int = 30 * 1024
    refuse_all: bool = False

    def check(self, card: Any, size: int = 0) -> None:
        """Raise the ApiError real Lark would answer for this card, if any rule is broken."""
        if too_many_tables(card):
            raise ApiError(
                230099, BUILD_FAILED.format(sub=11310, why="table over limit", what="markdown")
            )
        body = card.get("body") if isinstance(card, dict) else None
        found: list[dict[str, Any]] = []
        _components(body, found)
        tables = sum(
            1 if c["tag"] == "table" else md_tables(str(c.get("content") or ""))
            for c in found
            if c["tag"] in ("table", "markdown")
        )
        if tables > self.max_tables:
            why = "card table number over limit"
            raise ApiError(230099, BUILD_FAILED.format(sub=11310, why=why, what="table"))
        if len(found) > self.max_elements:
            why = "element exceeds the limit"
            raise ApiError(230099, BUILD_FAILED.format(sub=11310, why=why, what="elements"))
        if size > self.max_bytes:
            raise ApiError(230025, f"message content exceeds {self.max_bytes} bytes")
        if self.refuse_all:
            why = "card render failed"
            raise ApiError(230099, BUILD_FAILED.format(sub=200621, why=why, what="card"))


def refuse_bad_card(card: Any, rules: CardRules | None = None, size: int = 0) -> None:
    """Lark's own answer to a card it cannot render (`rules`: the default ones when None)."""
    (rules or CardRules()).check(card, size)


def _collect_elements(node: Any, out: dict[str, str]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("element_id"), str):
            text = node.get("content")
            if not isinstance(text, str) and isinstance(node.get("text"), dict):
                text = node["text"].get("content")
            out[node["element_id"]] = text if isinstance(text, str) else ""
        for value in node.values():
            _collect_elements(value, out)
    elif isinstance(node, list):
        for value in node:
            _collect_elements(value, out)


def _card_json(data: Any, rules: CardRules) -> dict[str, Any]:
    if not isinstance(data, str):
        raise ApiError(99992402, "data must be a card JSON string")
    try:
        card = json.loads(data)
    except ValueError as err:
        raise ApiError(200621, "card JSON is invalid") from err
    if not isinstance(card, dict) or card.get("schema") != "2.0":
        raise ApiError(200621, "CardKit needs card JSON 2.0 (schema 2.0)")
    try:
        rules.check(card, len(data.encode("utf-8")))
    except ApiError as err:
        if err.code == 230025:
            raise ApiError(200860, "card size exceeds the 30 KB limit") from None
        raise
    return card


class CardKit:
    """All card entities of one FakeLark."""

    def __init__(self) -> None:
        self.rules = CardRules()  # FakeLark.card_rules: shared with the message routes
        self.cards: dict[str, FakeCard] = {}
        self.op_uuids: set[tuple[str, str]] = set()  # (card_id, uuid) of operations done
        self.dedup_hits = 0

    def seen(self, card_id: str, body: dict[str, Any]) -> bool:
        """True when this operation's `uuid` was done on this card already (Lark's idempotency)."""
        uuid = body.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            return False
        if (card_id, uuid) in self.op_uuids:
            self.dedup_hits += 1
            return True
        return False

    def _done(self, card_id: str, body: dict[str, Any]) -> None:
        uuid = body.get("uuid")
        if isinstance(uuid, str) and uuid:
            self.op_uuids.add((card_id, uuid))

    def get(self, card_id: str) -> FakeCard:
        """The card or a 'not found' ApiError."""
        if card_id not in self.cards:
            raise ApiError(300301, f"card {card_id} not found")
        return self.cards[card_id]

    def create(self, body: dict[str, Any]) -> str:
        """POST /cardkit/v1/cards {"type": "card_json", "data": "<json>"} → card_id."""
        if body.get("type") != "card_json":
            raise ApiError(99992402, "type must be card_json")
        card_id = f"ck_fake_{len(self.cards) + 1}"
        entity = FakeCard(card_id, {})
        entity.load(_card_json(body.get("data"), self.rules))
        self.cards[card_id] = entity
        return card_id

    def content(self, card_id: str, element_id: str, body: dict[str, Any]) -> None:
        """PUT …/elements/{element_id}/content {"content", "sequence"}: full text so far."""
        card = self.get(card_id)
        if self.seen(card_id, body):
            return
        text = body.get("content")
        if not isinstance(text, str) or not 1 <= len(text) <= 100_000:
            raise ApiError(99992402, "content must be 1..100000 characters")
        if element_id not in card.elements:
            raise ApiError(300302, f"element {element_id} not found")
        if not card.streaming_mode:
            raise ApiError(300309, "streaming mode is closed")
        element = {"tag": "markdown", "content": text}  # the card with this text, as Lark sees it
        self.rules.check({"schema": "2.0", "body": {"elements": [element]}})
        card.check_sequence("content", body.get("sequence"))
        card.elements[element_id] = text
        card.element_history.setdefault(element_id, []).append(text)
        self._done(card_id, body)

    def settings(self, card_id: str, body: dict[str, Any]) -> None:
        """PATCH …/settings {"settings": "<json>", "sequence"}; applies config.streaming_mode."""
        card = self.get(card_id)
        if self.seen(card_id, body):
            return
        raw = body.get("settings")
        try:
            settings = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            settings = None
        if not isinstance(settings, dict):
            raise ApiError(99992402, "settings must be a JSON object string")
        card.check_sequence("settings", body.get("sequence"))
        card.settings_updates.append(settings)
        config = settings.get("config")
        if isinstance(config, dict) and "streaming_mode" in config:
            card.streaming_mode = bool(config["streaming_mode"])
        self._done(card_id, body)

    def update(self, card_id: str, body: dict[str, Any]) -> None:
        """PUT …/cards/{card_id} {"card": {"type": "card_json", "data"}, "sequence"}."""
        card = self.get(card_id)
        if self.seen(card_id, body):
            return
        spec = body.get("card")
        if not isinstance(spec, dict) or spec.get("type") != "card_json":
            raise ApiError(99992402, "card.type must be card_json")
        new = _card_json(spec.get("data"), self.rules)
        card.check_sequence("update", body.get("sequence"))
        card.load(new)
        self._done(card_id, body)

    def attach(self, content: dict[str, Any], message_id: str) -> None:
        """Sending `{"type": "card", "data": {"card_id"}}`: an entity can be sent only once."""
        data = content.get("data")
        card_id = data.get("card_id") if isinstance(data, dict) else None
        card = self.get(str(card_id))
        if card.sent_message_id:
            raise ApiError(230099, "card entity already sent")
        card.sent_message_id = message_id
