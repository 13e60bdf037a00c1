"""Approvals on any replica, end to end: the turn waits on replica A, the click lands on B.

Two real `larkbot serve` processes (`bench.soak_rig.Replica`) on one fresh PostgreSQL database,
one fake Lark and one fake model, reached through their config. An owner's message to A makes
the model ask for a shell command that needs an Approve click (a recursive delete, as in the
soak); the card is posted, the click (encrypted and signed like Lark's) goes to B's /lark/card,
and A's turn must go on from there: the first answer wins, wherever and whatever it was.
PostgreSQL's LISTEN/NOTIFY wakes the waiter (no `storage.redis_url`); the soak
(tests/test_soak.py) runs the same round trip with Redis pub/sub. The two processes are shared
by the module's tests.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from bench.soak_rig import Replica, free_port, replica_config
from cards import validate_lark_card
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, FakeToolCall, Reply
from tests.lark_harness import OWNER, message_event, seal
from tests.pg import fresh_database
from tests.test_cards_approval_e2e import approval_id_of, click

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),  # the first test also waits for two cold `serve` starts
]
WAIT = 60.0  # bound on each step; generous for a loaded 2-core machine
TOKEN = re.compile(r"appr-(\d+)")
_tokens = itertools.count(1)


@dataclass
class Turn:
    """One approval round: its message, what it would delete, where the command leaves a line."""

    token: str
    root: Path
    asked: list[float] = field(default_factory=list)  # when each model request came (monotonic)
    tool_results: list[str] = field(default_factory=list)

    @property
    def message_id(self) -> str:
        """The owner's message."""
        return f"om_appr_{self.token}"

    @property
    def victim(self) -> Path:
        """The directory the command deletes once approved."""
        return self.root / f"victim-{self.token}"

    @property
    def ledger(self) -> Path:
        """One line per run of the command."""
        return self.root / f"ran-{self.token}.txt"

    def runs(self) -> int:
        """How many times the command ran."""
        return len(self.ledger.read_text().splitlines()) if self.ledger.exists() else 0


class Rig:
    """Replicas A (gets the messages) and B (gets the clicks) and the fakes behind them."""

    def __init__(self, root: Path, lark: FakeLark, llm: FakeLLM, http: aiohttp.ClientSession):
        self.root, self.lark, self.http = root, lark, http
        self.a: Replica
        self.b: Replica
        self.turns: dict[str, Turn] = {}
        llm.responder = self._respond

    def _respond(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages", [])
        users = [m for m in messages if m.get("role") == "user"]
        found = TOKEN.search(json.dumps(users[-1:]))
        turn = self.turns.get(found.group(1) if found else "")
        if turn is None:
            return Reply(text="(not an approval round)")
        turn.asked.append(time.monotonic())
        if messages[-1].get("role") == "tool":
            turn.tool_results.append(str(messages[-1].get("content")))
            return Reply(text=f"finished appr-{turn.token}")
        command = f"echo ran >> {turn.ledger} && rm -rf {turn.victim}"  # needs an approval
        return Reply(tool_calls=[FakeToolCall("shell", {"command": command})])

    async def ask(self) -> tuple[Turn, str]:
        """An owner's message to A; once its approval card is out: the turn and approval id."""
        turn = Turn(str(next(_tokens)), self.root)
        self.turns[turn.token] = turn
        turn.victim.mkdir()
        (turn.victim / "data.txt").write_text("delete me")
        envelope = message_event(
            f"appr-{turn.token}: clean up", chat_id=f"oc_appr_{turn.token}",
            message_id=turn.message_id,
        )  # fmt: skip
        body, headers = seal(envelope)
        async with self.http.post(f"{self.a.base}/lark/events", data=body, headers=headers) as r:
            assert r.status == 200
        await self.lark.wait_for(lambda: self.card(turn) is not None, timeout=WAIT)
        card = self.card(turn)
        assert card is not None and validate_lark_card(card) == []
        return turn, approval_id_of(card)

    def card(self, turn: Turn) -> dict[str, Any] | None:
        """The approval card replying to the turn's message, once posted."""
        for m in self.lark.sent:
            if m["reply_to"] != turn.message_id or m["msg_type"] != "interactive":
                continue
            if "Approval" in json.dumps(m["body"].get("header", {})):
                return dict(m["body"])
        return None

    def answers(self, turn: Turn) -> list[str]:
        """The text replies to the turn's message."""
        return [
            m["body"].get("text", "")
            for m in self.lark.sent
            if m["reply_to"] == turn.message_id and m["msg_type"] == "text"
        ]

    async def answered(self, turn: Turn) -> list[str]:
        """Wait (bounded) for the turn's answer; all its text replies."""
        await self.lark.wait_for(lambda: bool(self.answers(turn)), timeout=WAIT)
        return self.answers(turn)

    async def click(
        self, replica: Replica, approval: str, decision: str, operator: str = OWNER
    ) -> dict[str, Any]:
        """A click (the owner's by default), sent to `replica`'s /lark/card like Lark's."""
        body, headers = seal(click(approval, decision, operator))
        async with self.http.post(f"{replica.base}/lark/card", data=body, headers=headers) as r:
            assert r.status == 200
            return dict(await r.json(content_type=None))


def logged(replica: Replica, event: str, approval: str) -> bool:
    """Whether the replica logged `event` for this approval."""
    lines = replica.log.read_text(errors="replace").splitlines()
    return any(f'"event": "{event}"' in line and approval in line for line in lines)


def resolved_as(answer: dict[str, Any]) -> str:
    """The resolved card's text (it names the decision)."""
    return json.dumps(answer["card"]["data"], ensure_ascii=False)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    """Two replicas on one fresh database, started together, shared by the module."""
    root = tmp_path_factory.mktemp("approvals")
    async with (
        fresh_database() as pg_url,
        FakeLark() as lark,
        FakeLLM() as llm,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WAIT)) as http,
    ):
        rig = Rig(root, lark, llm, http)
        replicas = []
        for index in range(2):
            port = free_port()
            config = replica_config(port, lark.domain, llm.base_url, pg_url, redis_url="")
            replicas.append(Replica(root, index, config, port))
        rig.a, rig.b = replicas
        try:
            for replica in replicas:
                await replica.start()
            await asyncio.gather(*(r.ready(http) for r in replicas))
            yield rig
        finally:
            for replica in replicas:
                await replica.stop()


async def test_an_approve_on_the_other_replica_resumes_the_turn_once(rig: Rig) -> None:
    turn, approval = await rig.ask()
    assert turn.runs() == 0 and turn.victim.exists()  # nothing runs before the click
    stranger = await rig.click(rig.b, approval, "approve", operator="ou_stranger")
    assert stranger["toast"]["type"] == "error" and "card" not in stranger  # owners only, on B too
    answer = await rig.click(rig.b, approval, "approve")
    assert answer["toast"] == {"type": "success", "content": "Approved."}
    assert "Approved" in resolved_as(answer)
    assert await rig.answered(turn) == [f"finished appr-{turn.token}"]
    assert turn.runs() == 1 and not turn.victim.exists()
    assert logged(rig.a, "lark_approval_asked", approval)  # A asked and ran it...
    assert logged(rig.b, "lark_approval_answered", approval)  # ...B took the click
    assert not logged(rig.a, "lark_approval_answered", approval)

    again = await rig.click(rig.a, approval, "approve")  # a second click, on the asker
    assert again["toast"] == {"type": "info", "content": "Already approved."}
    assert "Approved" in resolved_as(again)
    assert turn.runs() == 1 and len(turn.asked) == 2  # not run again, the model not asked again
    assert rig.answers(turn) == [f"finished appr-{turn.token}"]  # exactly one answer


async def test_a_deny_on_the_other_replica_lets_the_turn_go_on_without_the_tool(
    rig: Rig,
) -> None:
    turn, approval = await rig.ask()
    answer = await rig.click(rig.b, approval, "deny")
    assert answer["toast"] == {"type": "warning", "content": "Denied."}
    assert "Denied" in resolved_as(answer)
    assert await rig.answered(turn) == [f"finished appr-{turn.token}"]
    assert len(turn.tool_results) == 1 and "denied" in turn.tool_results[0]
    assert turn.runs() == 0 and turn.victim.exists()


async def test_clicks_on_both_replicas_at_once_the_first_answer_wins(rig: Rig) -> None:
    turn, approval = await rig.ask()
    on_b, on_a = await asyncio.gather(
        rig.click(rig.b, approval, "approve"), rig.click(rig.a, approval, "deny")
    )
    decided = [a for a in (on_b, on_a) if a["toast"]["type"] != "info"]
    assert len(decided) == 1  # one click decided...
    won = "approved" if decided[0] is on_b else "denied"
    lost = on_a if decided[0] is on_b else on_b
    assert lost["toast"]["content"] == f"Already {won}."  # ...the other is told what it was
    assert await rig.answered(turn) == [f"finished appr-{turn.token}"]
    assert turn.runs() == (1 if won == "approved" else 0)
