"""The policy pinned as a table: interface × sender × tool kind × share × turn → decision.

Every combination is generated and decided by `larkbot.policy.decide`; the result must equal
`tests/policy_table.tsv` row for row, so any change to who may do what shows up as a diff
a reviewer reads. Regenerate after an intended change with `python -m tests.test_policy_table`.
Invariants that must hold whatever the table says are asserted separately.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from larkbot.context import RequestContext
from larkbot.policy import Allow, Ask, Decision, Refuse, decide
from larkbot.policy.rules import ShareRule
from tools.base import BaseTool

TABLE = Path(__file__).with_name("policy_table.tsv")
INTERFACES = ("cli", "web", "lark")
SENDERS = ("owner", "guest")
SHARES: dict[str, ShareRule | None] = {"none": None, "everyone": "everyone", "guest": ["ou_g"]}
TURNS = ("clean", "untrusted", "scheduled")


class Kind(BaseTool):
    """A tool of one declared kind, with or without consent hooks."""

    description = "a tool"

    def __init__(self, name: str, side: bool, private: bool, ask: str, always: bool) -> None:
        self.name, self.side_effect, self.private_data = name, side, private
        self._ask, self._always = ask, always

    def consent_check(self, **kw: Any) -> str | None:
        return self._ask or None

    def consent_always(self, **kw: Any) -> bool:
        return self._always

    async def run(self, **kw: Any) -> str:
        return "ran"


KINDS = {
    "read_only": Kind("t", False, False, "", False),
    "private": Kind("t", False, True, "", False),
    "private+consent": Kind("t", False, True, "read a secret", True),
    "side_effect": Kind("t", True, False, "", False),
    "side_effect+consent": Kind("t", True, False, "write a file", False),
    "side_effect+always": Kind("t", True, False, "rm -rf", True),
    "side_effect+private": Kind("t", True, True, "", False),
}


def context(interface: str, sender: str, turn: str) -> RequestContext:
    owner = sender == "owner"
    return RequestContext(
        interface,  # type: ignore[arg-type]
        "s",
        "ou_o" if owner else "ou_g",
        owner,
        scheduled=turn == "scheduled",
        untrusted=("a message from ou_x",) if turn == "untrusted" else (),
    )


def label(decision: Decision) -> str:
    """allow | refuse | ask | ask-always."""
    if isinstance(decision, Allow):
        return "allow"
    if isinstance(decision, Refuse):
        return "refuse"
    return "ask-always" if decision.always else "ask"


def rows() -> list[tuple[str, ...]]:
    """Every combination and its decision."""
    out = []
    for interface, sender, kind, share, turn in itertools.product(
        INTERFACES, SENDERS, KINDS, SHARES, TURNS
    ):
        rule = SHARES[share]
        shares = {"t": rule} if rule is not None else {}
        got = decide(KINDS[kind], {}, context(interface, sender, turn), shares)
        out.append((interface, sender, kind, share, turn, label(got)))
    return out


def render() -> str:
    """The table as TSV with a header."""
    head = ("interface", "sender", "tool_kind", "share", "turn", "decision")
    return "\n".join("\t".join(r) for r in [head, *rows()]) + "\n"


def test_decisions_match_the_pinned_table() -> None:
    assert TABLE.read_text() == render(), "policy changed: review, then regenerate the table"


def test_invariants_hold_in_every_row() -> None:
    for interface, sender, kind, share, turn, decision in rows():
        where = (interface, sender, kind, share, turn)
        if sender == "guest":
            assert decision in ("allow", "refuse"), where  # nobody else can approve for them
            if kind.startswith("side_effect"):
                assert decision == "refuse", where  # no config opens a side effect
            if kind.startswith("private") and share == "none":
                assert decision == "refuse", where
        if sender == "owner" and turn == "untrusted" and kind.startswith("side_effect"):
            assert decision == "ask-always", where  # untrusted content raises the bar
        if kind == "side_effect+always" and sender == "owner":
            assert decision == "ask-always", where


def test_no_context_is_refused() -> None:
    assert isinstance(decide(KINDS["read_only"], {}, None, {}), Refuse)


def test_untrusted_sources_are_named_in_the_ask() -> None:
    ctx = context("lark", "owner", "untrusted")
    ask = decide(KINDS["side_effect"], {}, ctx, {})
    assert isinstance(ask, Ask) and ask.sources == ("a message from ou_x",)
    assert "a message from ou_x" in ask.prompt


if __name__ == "__main__":
    TABLE.write_text(render())
    print(f"wrote {TABLE} ({len(rows())} rows)")
