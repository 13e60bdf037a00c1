"""`/auth` asks only for the user scopes the app has enabled, and says which it skipped.

Through a served App: FakeLark answers the app-info read (`fake_lark.app_info`), FakeAccounts
records the device-authorization request whose `scope` is checked.
"""

from __future__ import annotations

from pathlib import Path

from larkbot.lark.oauth.scopes import requested
from tests.fakes.lark_accounts import FakeAccounts
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, message_event
from tests.oauth_harness import ALICE, auth_cards, dm_texts, group_auth, oauth_settings

LEGACY = "docs:doc:readonly"  # added to the manifest after many apps were registered


def _asked(accounts: FakeAccounts) -> list[list[str]]:
    """The `scope` of every device-authorization request, split."""
    return [
        r["form"]["scope"].split()
        for r in accounts.requests
        if r["path"] == "/oauth/v1/device_authorization"
    ]


def _drop_user_scope(lark: FakeLark, scope: str) -> None:
    """The fake app never enabled `scope` for user tokens."""
    listed = lark.app_info["scopes"]
    lark.app_info["scopes"] = [s for s in listed if s["scope"] != scope]


async def test_a_scope_the_app_lacks_is_not_asked_and_the_person_is_told(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    _drop_user_scope(fake_lark, LEGACY)
    link = f"{fake_lark.domain}/app/{fake_lark.app_id}/permission"
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await a.post_event(message_event("/auth", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(lambda: any("Not asked for" in t for t in fake_lark.texts()), 15)
        (asked,) = _asked(accounts)
        assert LEGACY not in asked
        assert "offline_access" in asked and "docx:document:readonly" in asked  # the rest stays
        assert len(auth_cards(fake_lark)) == 1
        said = next(t for t in fake_lark.texts() if "Not asked for" in t)
        assert said.startswith("I sent you the authorization card")
        assert f"read your older (legacy) documents ({LEGACY})" in said and link in said

        # in a group, in Chinese: the note goes to the sender's DM; Lark was asked once
        event = group_auth()
        await a.post_event(event)
        await fake_lark.wait_for(lambda: any("未申请" in t for t in dm_texts(fake_lark)), 15)
        note = next(t for t in dm_texts(fake_lark) if "未申请" in t)
        assert LEGACY in note and link in note
        await fake_lark.wait_for(lambda: "已私聊发给你。" in fake_lark.texts(), 15)
        assert [LEGACY in s for s in _asked(accounts)] == [False, False]
        assert fake_lark.app_info_reads == 1  # remembered briefly: one read for both


async def test_an_unreadable_app_info_asks_for_everything(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    _drop_user_scope(fake_lark, LEGACY)  # unseen: the app info cannot be read
    fake_lark.self_manage = False  # 99991672: no application:application:self_manage
    settings = oauth_settings(home, fake_lark, accounts, fake_llm.base_url)
    async with Served(settings) as a:
        await a.post_event(message_event("/auth", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(lambda: len(auth_cards(fake_lark)) == 1, 15)
        await fake_lark.wait_for(lambda: any("authorization card" in t for t in fake_lark.texts()))
        await a.post_event(message_event("/auth", chat_id="oc_mallory", sender="ou_mallory"))
        await fake_lark.wait_for(lambda: len(_asked(accounts)) == 2, 15)
    asked = _asked(accounts)[0]
    assert LEGACY in asked
    assert asked in (requested(settings, owner=False), requested(settings, owner=True))
    assert not any("Not asked for" in t for t in fake_lark.texts())
    looks = [r for r in fake_lark.requests if "/application/v6/applications/" in r.path]
    assert len(looks) == 1  # a failed look is remembered a while, not repeated for each /auth


async def test_an_app_enabling_no_user_scope_starts_no_flow(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    listed = fake_lark.app_info["scopes"]
    fake_lark.app_info["scopes"] = [s for s in listed if "user" not in s["token_types"]]
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await a.post_event(message_event("/auth", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(
            lambda: any("nothing to authorize" in t for t in fake_lark.texts())
        )
    said = next(t for t in fake_lark.texts() if "nothing to authorize" in t)
    assert LEGACY in said and f"/app/{fake_lark.app_id}/permission" in said
    assert _asked(accounts) == [] and auth_cards(fake_lark) == []


async def test_an_app_info_listing_no_scope_at_all_asks_for_everything(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM, accounts: FakeAccounts
) -> None:
    # a bot's app always has tenant scopes: an empty list is an answer not understood
    fake_lark.app_info["scopes"] = []
    settings = oauth_settings(home, fake_lark, accounts, fake_llm.base_url)
    async with Served(settings) as a:
        await a.post_event(message_event("/auth", chat_id="oc_alice", sender=ALICE))
        await fake_lark.wait_for(lambda: len(auth_cards(fake_lark)) == 1, 15)
    (asked,) = _asked(accounts)
    assert LEGACY in asked
    assert not any("nothing to authorize" in t for t in fake_lark.texts())
