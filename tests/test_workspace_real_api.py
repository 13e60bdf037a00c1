"""A workspace tool's errors through the real Lark side: `LarkWorkspaceApi` over FakeLark.

tests/workspace_access.py's double raises `WorkspaceApiError` itself; here the served App's own
wiring (the /auth token store, the channel's transport) answers, so what the tools catch is
what production raises: a refusal explained in words, an expired token refreshed and retried.
"""

from __future__ import annotations

from pathlib import Path

from larkbot.context import RequestContext
from larkbot.lark.oauth.api import LarkWorkspaceApi
from tests.fakes.lark_accounts import FakeAccounts
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import Served
from tests.oauth_harness import ALICE, authorized, oauth_settings, workspace
from tools.base import ToolResult

MINE, THEIRS = "doxcnAlicesOwn001", "doxcnBobsOwn00001"
CONTENT = "GET /open-apis/docs/v1/content"


async def read_doc(served: Served, doc: str) -> ToolResult:
    """`lark_doc_read` of `doc` as Alice in her DM, as the agent would call it."""
    tool = served.app.core.registry.get("lark_doc_read")
    assert tool is not None
    ctx = RequestContext("lark", "s", ALICE, False, chat_id="oc_alice", chat_type="p2p")
    out = await tool.invoke(ctx, {"url": f"https://acme.feishu.cn/docx/{doc}"})
    return out if isinstance(out, ToolResult) else ToolResult(out)


async def test_refusals_are_explained_and_an_expired_token_is_refreshed_and_retried(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    fake_lark.workspace.add_doc(MINE, "# Mine\n\n- ship it\n", {ALICE}, "Mine")
    fake_lark.workspace.add_doc(THEIRS, "# Theirs\n\n- secret\n", {"ou_bob"}, "Theirs")
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await authorized(a, fake_lark, accounts)
        access = workspace(a)
        assert isinstance(access.api, LarkWorkspaceApi)  # the production path, no double

        denied = await read_doc(a, THEIRS)
        assert denied.is_error and "you cannot open this document" in denied.content
        assert "1770032" in denied.content and "secret" not in denied.content
        missing = await read_doc(a, "doxcnNoSuchDoc001")
        assert missing.is_error and "was not found" in missing.content

        token = await access.tokens.token_for(ALICE)
        fake_lark.fail_next(CONTENT, status=400, code=99991677, msg="token expired")
        out = await read_doc(a, MINE)
        assert not out.is_error and "ship it" in out.content
        fresh = await access.tokens.token_for(ALICE)
        assert fresh != token and len(accounts.refresh_calls) == 1  # one refresh, then the retry
        reads = [r.authorization for r in fake_lark.requests if r.path.endswith(CONTENT[4:])]
        assert reads[-2:] == [f"Bearer {token}", f"Bearer {fresh}"]


async def test_a_legacy_doc_is_readable_with_the_scopes_auth_asks_for(
    home: Path, fake_lark: FakeLark, accounts: FakeAccounts, fake_llm: FakeLLM
) -> None:
    # the old API takes none of the docx scopes: /auth must ask for one it takes
    fake_lark.workspace.add_doc("doccnAlicesOld001", "Old minutes\n", {ALICE})
    async with Served(oauth_settings(home, fake_lark, accounts, fake_llm.base_url)) as a:
        await authorized(a, fake_lark, accounts)
        tool = a.app.core.registry.get("lark_doc_read")
        assert tool is not None
        ctx = RequestContext("lark", "s", ALICE, False, chat_id="oc_alice", chat_type="p2p")
        out = await tool.invoke(ctx, {"url": "https://acme.feishu.cn/docs/doccnAlicesOld001"})
    result = out if isinstance(out, ToolResult) else ToolResult(out)
    assert not result.is_error and "Old minutes" in result.content, result.content
