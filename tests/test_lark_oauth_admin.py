"""The owner's views of people's authorizations: `larkbot auth list | revoke`, GET /api/auth.

Both show who authorized, their scopes and expiry, and never a token.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.oauth.doctor import check_oauth
from tests.fakes.lark_accounts import FakeAccounts
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.oauth_harness import ALICE, authorized, oauth_settings, workspace
from tests.web_harness import AUTH, WEB_TOKEN
from tools.workspace.access import NotAuthorized, WorkspaceApiError


async def larkbot(home: Path, lark: FakeLark, accounts: FakeAccounts, *args: str) -> str:
    """Run `larkbot ARGS` as a process on the same home and database; its stdout."""
    env = {
        **os.environ,
        "LARKBOT_HOME": str(home),
        "LARK_APP_ID": lark.app_id,
        "LARK_APP_SECRET": lark.app_secret,
        "LARK_DOMAIN": lark.domain,
        "LARK_ACCOUNTS_DOMAIN": accounts.url,
        "LARKBOT_STORAGE_URL": f"sqlite:///{home}/larkbot.db",
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "larkbot", *args, env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out
    return out.decode()


async def test_cli_lists_and_revokes_without_tokens(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await authorized(a, fake_lark, accounts)
        listed = await larkbot(home, fake_lark, accounts, "auth", "list")
        assert listed.startswith(f"{ALICE}  Alice  scopes: docx:document:readonly")
        assert "renewable until" in listed
        assert not [s for s in accounts.issued_secrets if s in listed]

        said = await larkbot(home, fake_lark, accounts, "auth", "revoke", ALICE)
        assert "is removed" in said
        assert accounts.revoked == [accounts.issued_secrets[1]]  # the refresh token
        with pytest.raises(NotAuthorized):
            await workspace(a).tokens.token_for(ALICE)
        assert "Nobody" in await larkbot(home, fake_lark, accounts, "auth", "list")


async def test_web_account_view_shows_no_tokens(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    settings = oauth_settings(
        home, fake_lark, accounts, fake_llm.base_url, web={"token": WEB_TOKEN}
    )
    async with Served(settings) as a:
        assert a.http is not None
        async with a.http.get(a.url("/api/auth")) as resp:
            assert resp.status == 401
        await authorized(a, fake_lark, accounts)
        async with a.http.get(a.url("/api/auth"), headers=AUTH) as resp:
            assert resp.status == 200
            raw = await resp.text()
        body = json.loads(raw)["authorizations"]
        assert [(g["open_id"], g["name"]) for g in body] == [(ALICE, "Alice")]
        assert "task:task:read" in body[0]["scopes"]
        assert not [s for s in accounts.issued_secrets if s in raw]


async def test_app_scope_missing_is_a_doctor_line(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    settings = oauth_settings(home, fake_lark, accounts, fake_llm.base_url)
    async with Served(settings) as a:
        await authorized(a, fake_lark, accounts)
        access = workspace(a)
        token = await access.tokens.token_for(ALICE)
        route = "GET /open-apis/task/v2/tasks"
        fake_lark.fail_next(route, status=400, code=99991672, msg="app lacks task:task:read")
        with pytest.raises(WorkspaceApiError) as raised:  # what the tools read
            await access.api.call("GET", "/open-apis/task/v2/tasks", user_token=token)
        assert raised.value.code == 99991672
        assert isinstance(raised.value.__cause__, LarkAPIError)  # Lark's own, for the logs
        line = await check_oauth(settings, a.app.core.http)
    assert not line.ok and "task:task:read" in line.detail
    assert "/app/cli_test/auth?q=" in line.fix
