"""Lark: the policy's decisions in the audit log, owner.share, pairing, commands."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from larkbot.consent import NobodyToAsk
from larkbot.context import RequestContext
from larkbot.lark.approvals.audit import AuditLog, digest
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.owners import Owners
from larkbot.lark.turns.commands import Commands, parse_command
from larkbot.policy import Policy, ToolGate, Verdict
from larkbot.providers.base import ToolCall
from larkbot.storage.db import Database
from tools.base import BaseTool


class _Tool(BaseTool):
    def __init__(self, name: str, side_effect: bool = False, private_data: bool = False) -> None:
        self.name, self.description = name, name
        self.side_effect, self.private_data = side_effect, private_data

    async def run(self, **kwargs: Any) -> str:
        return "ran"


SHELL = _Tool("shell", side_effect=True)
READ = _Tool("file_read", private_data=True)
SEARCH = _Tool("web_search")


def ctx(sender: str, owner: bool) -> RequestContext:
    return RequestContext("lark", "lark:oc_1", sender_id=sender, is_owner=owner, chat_id="oc_1")


@pytest.fixture
async def db(home: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{home}/larkbot.db")
    yield database
    await database.close()


async def test_policy_and_audit(db: Database) -> None:
    audit = AuditLog(db)
    await audit.init()
    share: dict[str, Any] = {}
    policy = Policy(lambda: share)
    tools = {t.name: t for t in (SHELL, READ, SEARCH)}
    gate = ToolGate(policy, tools.get, lambda c: [], NobodyToAsk(), audit)

    async def refusal(tool: BaseTool, c: RequestContext, args: Any = None) -> str | None:
        (verdict,) = [v async for v in gate.check(ToolCall("c1", tool.name, args or {}), c)]
        assert isinstance(verdict, Verdict)
        return verdict.refusal or None

    guest, owner = ctx("ou_guest", False), ctx("ou_owner", True)

    assert await refusal(SHELL, owner, {"command": "ls"}) is None
    assert "only the bot's owner" in (await refusal(SHELL, guest, {"command": "ls"}) or "")
    assert await refusal(READ, guest, {"path": "/x"}) is not None
    assert await refusal(SEARCH, guest, {"query": "q"}) is None
    assert [t.name for t in policy.visible([SHELL, READ, SEARCH], guest)] == ["web_search"]
    assert len(policy.visible([SHELL, READ, SEARCH], owner)) == 3

    share["file_read"] = ["ou_guest"]
    share["shell"] = "everyone"  # config cannot open a side-effect tool
    assert await refusal(READ, guest) is None
    assert await refusal(READ, ctx("ou_other", False)) is not None
    assert await refusal(SHELL, guest) is not None
    share["file_read"] = "everyone"
    assert await refusal(READ, ctx("ou_other", False)) is None

    entries = await audit.recent()
    assert len(entries) == 8
    oldest = entries[-1]
    assert (oldest.sender, oldest.chat, oldest.tool, oldest.allowed) == (
        "ou_owner",
        "oc_1",
        "shell",
        True,
    )
    assert oldest.args_digest == digest({"command": "ls"}) and len(oldest.args_digest) == 64
    refused = entries[-2]
    assert (refused.sender, refused.allowed) == ("ou_guest", False) and "owner" in refused.reason
    await audit.close()


def _dm(sender: str, text: str, chat_type: str = "p2p") -> InboundMessage:
    return InboundMessage("om_1", "oc_1", chat_type, sender, text)


class _Resets:
    def __init__(self) -> None:
        self.cleared: list[str] = []

    async def __call__(self, session_id: str) -> None:
        self.cleared.append(session_id)


async def test_claim_flow_persists(db: Database) -> None:
    owners = Owners(db, [])
    await owners.init()
    code = owners.pairing_code
    assert code and len(code) == 8
    commands = Commands(owners, _Resets())

    async def run(sender: str, text: str, chat_type: str = "p2p") -> str:
        parsed = parse_command(text)
        assert parsed is not None
        return await commands.run(*parsed, _dm(sender, text, chat_type), "lark:oc_1")

    assert "direct message" in await run("ou_a", f"/claim {code}", chat_type="group")
    assert "not right" in await run("ou_a", "/claim 00000000" if code != "00000000" else "/claim 1")
    assert "now the owner" in await run("ou_a", f"/claim {code}")
    assert "already has an owner" in await run("ou_b", f"/claim {code}")
    assert "you are the owner" in await run("ou_a", "/whoami")
    assert "ou_b; you are not an owner" in await run("ou_b", "/whoami")

    again = Owners(db, [])  # a restart: the claim is in the database
    await again.init()
    assert again.pairing_code is None and await again.check("ou_a")
    assert not await again.check("ou_b")


async def test_configured_owner_means_no_pairing(db: Database) -> None:
    owners = Owners(db, ["ou_cfg"])
    await owners.init()
    assert owners.pairing_code is None and await owners.check("ou_cfg")
    assert not (await owners.claim("ou_x", "12345678", is_dm=True)).ok


async def test_new_clears_history_and_grants(db: Database) -> None:
    owners = Owners(db, ["ou_cfg"])
    await owners.init()
    resets = _Resets()
    commands = Commands(owners, resets)
    reply = await commands.run("/new", "", _dm("ou_a", "/new"), "lark:oc_1")
    assert "fresh" in reply and resets.cleared == ["lark:oc_1"]
    assert "/claim" in await commands.run("/help", "", _dm("ou_a", "/help"), "lark:oc_1")
    assert parse_command("/etc/hosts is what?") is None and parse_command("hello") is None
    assert parse_command("/NEW please") == ("/new", "please")


def test_group_policy_and_sessions() -> None:
    from larkbot.config import LarkConfig
    from larkbot.lark.turns.routing import session_id_for, should_answer

    def m(chat_type: str = "group", **kw: Any) -> InboundMessage:
        return InboundMessage("om", "oc_1", chat_type, "ou_a", "hi", **kw)

    mention, everyone = LarkConfig(), LarkConfig(group_policy="all")
    at_all_ok = LarkConfig(answer_at_all=True)
    assert should_answer(m("p2p"), mention) is None
    assert should_answer(m(), mention) is not None
    assert should_answer(m(mentions=("Tom",)), mention) is not None  # someone else
    assert should_answer(m(mentions_bot=True), mention) is None
    assert should_answer(m(mentioned_all=True), mention) is not None
    assert should_answer(m(mentioned_all=True), at_all_ok) is None
    assert should_answer(m(), everyone) is None
    assert session_id_for(m()) == "lark:oc_1"
    assert session_id_for(m(thread_id="omt_9")) == "lark:oc_1:omt_9"


async def test_pairing_code_is_replaced_after_repeated_wrong_guesses(db: Database) -> None:
    """Regression: /claim accepted unlimited guesses of the 8-digit code."""
    from larkbot.lark.owners import MAX_WRONG_CLAIMS

    owners = Owners(db, [])
    await owners.init()
    first = owners.pairing_code
    assert first is not None
    wrong = "00000000" if first != "00000000" else "11111111"
    results = [await owners.claim("ou_guesser", wrong, is_dm=True) for _ in range(MAX_WRONG_CLAIMS)]
    assert not any(r.ok for r in results) and "Too many" in results[-1].message
    assert owners.pairing_code not in (None, first)
    assert not (await owners.claim("ou_guesser", first, is_dm=True)).ok  # the old code is dead
    assert (await owners.claim("ou_op", owners.pairing_code or "", is_dm=True)).ok


async def test_audit_queue_is_bounded_and_recording_never_blocks(db: Database) -> None:
    """Regression: with the database stalled, the audit queue grew without limit."""
    from larkbot.lark.approvals.audit import MAX_QUEUED

    audit = AuditLog(db)  # no init(): no writer drains the queue, as if the DB were stalled
    for i in range(MAX_QUEUED + 50):
        audit.record("ou_x", "oc_1", "shell", {"i": i}, False, "refused")
    assert audit.pending == MAX_QUEUED
