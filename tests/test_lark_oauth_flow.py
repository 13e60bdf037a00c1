"""`/auth` end to end through a served App: the card, the approval, the identity check.

FakeLark serves the chat and the user-token routes, FakeAccounts the device flow; the person's
approval is `accounts.approve(code, open_id)`, as if they opened the card's link.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cards import validate_lark_card
from cards.lark_auth import auth_card
from larkbot.config import Settings
from larkbot.lark.oauth.scopes import requested
from tests.fakes.lark_accounts import FakeAccounts
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, message_event
from tests.oauth_harness import (
    ALICE,
    auth_cards,
    authorize,
    dm_texts,
    group_auth,
    oauth_settings,
    workspace,
)
from tools.workspace.access import NotAuthorized


async def test_dm_auth_card_approval_and_confirmation(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await authorize(a, fake_lark, accounts)
        await fake_lark.wait_for(lambda: any("Alice" in t for t in dm_texts(fake_lark)), 15)
        done = next(t for t in dm_texts(fake_lark) if "Alice" in t)
        assert done.startswith("Authorized as Alice.") and "read your documents" in done
        asked = accounts.flows[0].scopes
        assert "offline_access" in asked and "docx:document:readonly" in asked
        device = accounts.requests[0]
        assert device["path"] == "/oauth/v1/device_authorization"
        assert device["authorization"].startswith("Basic ")
        # the identity check carried the new user token, never the tenant's
        info = [r for r in fake_lark.requests if r.path.endswith("/authen/v1/user_info")]
        assert [r.authorization[:9] for r in info] == ["Bearer u-"]

        access = workspace(a)
        token = await access.tokens.token_for(ALICE)
        assert token.startswith("u-")
        fake_lark.workspace.tasks[ALICE] = [{"summary": "task of Alice", "completed_at": "0"}]
        data = await access.api.call("GET", "/open-apis/task/v2/tasks", user_token=token)
        assert [t["summary"] for t in data["items"]] == ["task of Alice"]
        calls = [r for r in fake_lark.requests if r.path.endswith("/task/v2/tasks")]
        assert [r.authorization for r in calls] == [f"Bearer {token}"]

        await a.post_event(message_event("/auth status", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(lambda: any("Valid until" in t for t in fake_lark.texts()))


async def test_someone_else_approving_is_discarded(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await authorize(a, fake_lark, accounts, approver="ou_mallory")
        await fake_lark.wait_for(lambda: any("Mallory" in t for t in dm_texts(fake_lark)), 15)
        said = next(t for t in dm_texts(fake_lark) if "Mallory" in t)
        assert "not by you" in said and "discarded" in said
        assert accounts.revoked  # Lark was told to drop it too
        access = workspace(a)
        with pytest.raises(NotAuthorized):
            await access.tokens.token_for(ALICE)


async def test_group_auth_goes_to_the_senders_dm(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        event = group_auth()
        await a.post_event(event)
        await fake_lark.wait_for(lambda: "已私聊发给你。" in fake_lark.texts(), 15)
        assert len(auth_cards(fake_lark)) == 1
        card = auth_cards(fake_lark)[0]
        assert card["header"]["title"]["content"] == "授权机器人以你的身份操作"
        to_group = [m for m in fake_lark.sent if m["msg_type"] == "interactive"]
        assert all(m["receive_id"] == ALICE for m in to_group)


async def test_declined_and_revoke(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await a.post_event(message_event("/auth", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(lambda: len(auth_cards(fake_lark)) == 1, 15)
        accounts.flows[0].denied = True
        await fake_lark.wait_for(lambda: any("declined" in t for t in dm_texts(fake_lark)))

        await authorize(a, fake_lark, accounts)
        await fake_lark.wait_for(lambda: any("Alice" in t for t in dm_texts(fake_lark)), 15)
        await a.post_event(message_event("/取消授权", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(lambda: any("已取消授权" in t for t in fake_lark.texts()))
        assert accounts.revoked and accounts.revoked[-1].startswith("ur-")
        access = workspace(a)
        with pytest.raises(NotAuthorized):
            await access.tokens.token_for(ALICE)


async def test_a_tool_asking_for_a_stranger_sends_them_the_card(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        tokens = workspace(a).tokens
        for _ in range(2):  # the second within the cooldown: no second card
            with pytest.raises(NotAuthorized):
                await tokens.token_for(ALICE)
        assert len(auth_cards(fake_lark)) == 1
        card = auth_cards(fake_lark)[0]
        assert card["header"]["title"]["content"] == "Authorize larkbot to act as you"


async def test_slow_down_widens_the_interval_and_expiry_ends_the_flow(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    accounts.slow_downs = 1
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await authorize(a, fake_lark, accounts)
        await fake_lark.wait_for(lambda: any("Alice" in t for t in dm_texts(fake_lark)), 30)
        polls = [r["at"] for r in accounts.requests if r["path"] == "/oauth/v3/token"]
        assert len(polls) == 2 and polls[1] - polls[0] >= 5.0  # interval + 5 s

        accounts.expires_in = 0.3  # nobody approves this one in time
        await a.post_event(message_event("/auth", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(lambda: any("expired" in t for t in dm_texts(fake_lark)), 15)


def test_auth_cards_are_valid_lark_cards() -> None:
    for lang in ("en", "zh"):
        for more in (False, True):
            card = auth_card("https://accounts/verify?c=1", "CODE-1", 4, "read", lang, more)
            assert validate_lark_card(card) == [], (lang, more)


def test_requested_scopes_follow_workspace_settings() -> None:
    def ws(enabled: bool, members: str) -> Settings:
        return Settings.model_validate({"workspace": {"enabled": enabled, "members": members}})

    assert "bitable:app" in requested(ws(True, "read"), owner=True)
    member = requested(ws(True, "read"), owner=False)
    assert "bitable:app:readonly" in member and "bitable:app" not in member
    assert "bitable:app" in requested(ws(True, "write"), owner=False)
    assert requested(ws(True, "off"), owner=False) == ["offline_access"]
    assert requested(ws(False, "write"), owner=True) == ["offline_access"]


async def test_an_unverifiable_token_is_not_stored(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        fake_lark.fail_next("GET /open-apis/authen/v1/user_info", status=400, code=20010)
        await authorize(a, fake_lark, accounts)
        await fake_lark.wait_for(lambda: any("20010" in t for t in dm_texts(fake_lark)), 15)
        assert accounts.revoked == [accounts.issued_secrets[0]]
        tokens = workspace(a).tokens
        with pytest.raises(NotAuthorized):
            await tokens.token_for(ALICE)
