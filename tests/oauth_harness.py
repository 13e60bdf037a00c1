"""Helpers for the `/auth` tests: a served App wired to FakeLark and FakeAccounts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from larkbot.config import Settings
from tests.fakes.lark_accounts import FakeAccounts
from tests.fakes.lark_server import FakeLark
from tests.lark_harness import Served, bot_mention, message_event, settings_for

ALICE = "ou_alice"
NAMES = {ALICE: "Alice", "ou_mallory": "Mallory"}


def oauth_settings(
    home: Path, lark: FakeLark, accounts: FakeAccounts, llm_url: str, **over: Any
) -> Settings:
    """`settings_for` with the accounts host pointed at FakeAccounts."""
    return settings_for(home, lark.domain, llm_url, lark={"accounts_domain": accounts.url}, **over)


def auth_cards(lark: FakeLark, open_id: str = ALICE) -> list[dict[str, Any]]:
    """The interactive messages sent to `open_id` (by open_id: their DM with the bot)."""
    return [
        m["body"]
        for m in lark.sent
        if m["msg_type"] == "interactive"
        and m["receive_id"] == open_id
        and m["receive_id_type"] == "open_id"
    ]


def user_code(card: dict[str, Any]) -> str:
    """The code shown on an authorization card."""
    found = re.search(r"CODE-\d+", json.dumps(card))
    assert found, card
    return found.group(0)


def dm_texts(lark: FakeLark, open_id: str = ALICE) -> list[str]:
    """Texts the bot sent to `open_id` by open_id (outside any reply)."""
    return [
        m["body"].get("text", "")
        for m in lark.sent
        if m["msg_type"] == "text" and m["receive_id"] == open_id
    ]


def group_auth(text: str = "/授权", sender: str = ALICE) -> dict[str, Any]:
    """`text` sent by `sender` in a group, @-mentioning the bot."""
    return message_event(
        f"@_user_1 {text}",
        chat_id="oc_group",
        chat_type="group",
        sender=sender,
        mentions=[bot_mention()],
    )


async def authorize(
    served: Served,
    lark: FakeLark,
    accounts: FakeAccounts,
    approver: str = ALICE,
    scopes: list[str] | None = None,
) -> str:
    """ALICE sends /auth in a DM, `approver` approves the card's code (to `scopes`, default all
    asked); returns the code."""
    before = len(auth_cards(lark))
    await served.post_event(message_event("/auth", chat_id="oc_alice", sender=ALICE))
    await lark.wait_for(lambda: len(auth_cards(lark)) > before, timeout=15)
    code = user_code(auth_cards(lark)[-1])
    accounts.approve(code, approver, scopes)
    return code


async def authorized(
    served: Served, lark: FakeLark, accounts: FakeAccounts, scopes: list[str] | None = None
) -> None:
    """`authorize` as ALICE and wait for the bot's confirmation."""
    await authorize(served, lark, accounts, scopes=scopes)
    await lark.wait_for(lambda: any("Authorized as" in t for t in dm_texts(lark)), 15)


def workspace(served: Served) -> Any:
    """The `WorkspaceAccess` the App registered for the tools."""
    return served.app.core.runtime.services["workspace"]
