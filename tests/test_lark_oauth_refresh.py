"""A person's token refreshed once across replicas (PostgreSQL lease row, Redis key, SQLite).

Two App instances share the database: each hands out the token; when it is stale or refused,
exactly one of them trades the single-use refresh token and the other reads the new pair. A
refresh token Lark refuses ends the authorization. Tokens never appear in plain text in any
file under LARKBOT_HOME or in the logs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.fakes.lark_accounts import FakeAccounts
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served, redis_server
from tests.oauth_harness import ALICE, authorized, oauth_settings, workspace
from tools.workspace.access import MissingScopes, NotAuthorized


@asynccontextmanager
async def replicas(
    home: Path, lark: FakeLark, accounts: FakeAccounts, llm: FakeLLM, **storage: str
) -> AsyncIterator[tuple[Served, Served]]:
    """Two Apps on one database (and Redis, when given)."""
    settings = oauth_settings(home, lark, accounts, llm.base_url)
    if storage:
        settings = settings.model_copy(
            update={"storage": settings.storage.model_copy(update=storage)}
        )
    async with Served(settings) as a, Served(settings) as b:
        yield a, b


async def refreshed_once(a: Served, b: Served, lark: FakeLark, accounts: FakeAccounts) -> None:
    """A stale token, then a refused one: each time one refresh call, every caller served."""
    accounts.access_expires_in = 100  # inside the refresh margin: stale at once
    await authorized(a, lark, accounts)
    accounts.access_expires_in = 7200
    first_refresh = next(iter(accounts.live_refresh))
    ta, tb = workspace(a).tokens, workspace(b).tokens
    got = await asyncio.gather(*(t.token_for(ALICE) for t in (ta, tb, ta, tb)))
    assert len(set(got)) == 1 and got[0] in lark.user_tokens
    assert accounts.refresh_calls == [first_refresh]

    for t in (ta, tb):  # Lark refused it on both replicas (99991668)
        await t.invalidate(ALICE, got[0])
    again = await asyncio.gather(tb.token_for(ALICE), ta.token_for(ALICE))
    assert len(set(again)) == 1 and again[0] != got[0]
    assert len(accounts.refresh_calls) == 2
    assert len(set(accounts.refresh_calls)) == 2  # no refresh token presented twice


async def test_refresh_once_across_replicas_postgres(
    home: Path, pg_url: str, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    async with replicas(home, fake_lark, accounts, fake_llm, url=pg_url) as (a, b):
        await refreshed_once(a, b, fake_lark, accounts)


async def test_refresh_once_across_replicas_redis(
    home: Path, tmp_path: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    with redis_server(tmp_path) as redis_url:
        async with replicas(home, fake_lark, accounts, fake_llm, redis_url=redis_url) as (a, b):
            await refreshed_once(a, b, fake_lark, accounts)


async def test_refused_refresh_ends_the_authorization_and_no_token_leaks(
    home: Path,
    fake_lark: FakeLark,
    accounts: FakeAccounts,
    fake_llm: FakeLLM,
    capfd: pytest.CaptureFixture[str],
) -> None:
    async with replicas(home, fake_lark, accounts, fake_llm) as (a, b):
        await refreshed_once(a, b, fake_lark, accounts)
        token = await workspace(a).tokens.token_for(ALICE)
        await workspace(b).api.call("GET", "/open-apis/task/v2/tasks", user_token=token)
        accounts.live_refresh.clear()  # Lark revoked the grant (e.g. the person left)
        await workspace(a).tokens.invalidate(ALICE, token)
        with pytest.raises(NotAuthorized):
            await workspace(a).tokens.token_for(ALICE)
        with pytest.raises(NotAuthorized):  # the row is gone for every replica
            await workspace(b).tokens.token_for(ALICE)

    key = home / ".secrets" / "lark_oauth.key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    secrets = accounts.issued_secrets
    assert len(secrets) == 6  # three pairs: the flow's and two refreshes
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not [s for s in secrets if s.encode() in data], path
    logs = capfd.readouterr()
    assert not [s for s in secrets if s in logs.out or s in logs.err]


async def test_missing_scope_offers_just_that_scope(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    async with replicas(home, fake_lark, accounts, fake_llm) as (a, _):
        await authorized(a, fake_lark, accounts, scopes=["offline_access", "wiki:node:read"])
        access = workspace(a)
        token = await access.tokens.token_for(ALICE)
        with pytest.raises(MissingScopes) as raised:
            await access.api.call("GET", "/open-apis/task/v2/tasks", user_token=token)
        assert raised.value.scopes == ["task:task:read"]
        await fake_lark.wait_for(lambda: len(accounts.flows) == 2)
        assert accounts.flows[1].scopes == ["offline_access", "task:task:read"]
        more = [m for m in fake_lark.sent if m["msg_type"] == "interactive"][-1]
        assert more["receive_id"] == ALICE
        assert more["body"]["header"]["title"]["content"] == "Grant larkbot more access"


async def test_a_cancelled_caller_does_not_lose_the_refreshed_pair(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    async with replicas(home, fake_lark, accounts, fake_llm) as (a, _):
        accounts.access_expires_in = 100  # stale at once
        await authorized(a, fake_lark, accounts)
        accounts.access_expires_in, accounts.refresh_gate = 7200, asyncio.Event()
        tokens = workspace(a).tokens
        caller = asyncio.create_task(tokens.token_for(ALICE))
        async with asyncio.timeout(30):
            while not accounts.refresh_calls:  # Lark has done it; its answer is held back
                await asyncio.sleep(0.01)
        assert not caller.done()
        caller.cancel()  # e.g. /stop on the turn whose tool asked
        accounts.refresh_gate.set()  # now Lark's answer arrives
        token = await tokens.token_for(ALICE)
        assert token in fake_lark.user_tokens
        assert len(accounts.refresh_calls) == 1
