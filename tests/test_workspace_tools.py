"""Workspace tools against FakeLark: each tool, with the asker's own token, and its errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from larkbot.context import RequestContext
from tests.builtin_rt import tool_runtime
from tests.fakes.lark_server import FakeLark
from tests.workspace_access import workspace_access
from tests.workspace_rig import ALICE, BOB, DOC, LONG, OWNER, Rig, open_rig, seed
from tools.builtin.workspace import provide
from tools.workspace.links import LinkError, has_doc_link, parse


@pytest.fixture
async def rig(home: Path, fake_lark: FakeLark) -> AsyncIterator[Rig]:
    """Alice and Bob have authorized; Carol has not."""
    async with open_rig(fake_lark) as opened:
        yield opened


def test_links_are_read_by_path_on_any_host() -> None:
    assert parse("https://acme.feishu.cn/docx/doxcnAbc12345?from=x#h").token == "doxcnAbc12345"
    base = parse("https://acme.larksuite.com/base/bascnX12345678?table=tblA&view=vewB")
    assert (base.kind, base.table, base.view) == ("bitable", "tblA", "vewB")
    assert parse("acme.larkoffice.com/wiki/wikcnNode1234?table=tblQ").table == "tblQ"
    assert parse("https://a.feishu.cn/sheets/shtcn1234567?sheet=s9").sheet == "s9"
    assert parse("doxcnBareToken01").kind == "docx"
    with pytest.raises(LinkError):
        parse("https://example.com/nothing")
    assert has_doc_link("see https://acme.feishu.cn/wiki/wikcnNode1234 pls")
    assert not has_doc_link("see https://example.com/docx/abcdefgh1234")


async def test_doc_read_docx_wiki_and_larksuite_links_with_the_askers_token(rig: Rig) -> None:
    ws = rig.fake.workspace
    out = await rig.run("lark_doc_read", url=f"https://acme.feishu.cn/docx/{DOC}")
    assert "# Plan" in out.content and "| 1 | 2 |" in out.content and not out.is_error
    assert len(ws.calls) == 1
    out = await rig.run("lark_doc_read", url="https://acme.larksuite.com/wiki/wikcnPlanNode0001")
    assert "Plan (wiki)" in out.content and "- ship it" in out.content
    assert len(ws.calls) == 3  # get_node + content
    assert set(ws.bearers()) == {ALICE}


async def test_long_documents_come_in_pages_with_a_notice(rig: Rig) -> None:
    first = await rig.run("lark_doc_read", url=LONG)
    assert "page 1 of" in first.content and "more pages" in first.content
    assert len(first.content) < 8000 and "line 0 " in first.content
    calls = len(rig.fake.workspace.calls)
    second = await rig.run("lark_doc_read", url=LONG, page=2)
    assert "page 2 of" in second.content and "line 0 " not in second.content
    assert len(rig.fake.workspace.calls) == calls  # later pages: this person's recent read
    theirs = await rig.run("lark_doc_read", who=BOB, url=LONG, page=2)
    assert theirs.is_error and "line " not in theirs.content  # never another person's copy


async def test_an_expired_token_is_refreshed_once_and_the_call_repeated(rig: Rig) -> None:
    rig.fake.fail_next("GET /open-apis/docs/v1/content", status=400, code=99991677)
    out = await rig.run("lark_doc_read", url=DOC)
    assert "ship it" in out.content
    tokens = rig.rt.services["workspace"].tokens
    assert [who for who, _ in tokens.invalidated] == [ALICE]


async def test_no_access_and_no_authorization_say_so(rig: Rig) -> None:
    denied = await rig.run("lark_doc_read", who=BOB, url=DOC)
    assert denied.is_error and "you cannot open this document" in denied.content
    assert "ship it" not in denied.content
    unknown = await rig.run("lark_doc_read", who="ou_carol", url=DOC)
    assert unknown.is_error and "send /auth" in unknown.content
    assert rig.fake.workspace.bearers() == [BOB]  # Carol's call never reached Lark
    wiki = await rig.run("lark_doc_read", who=BOB, url="https://a.feishu.cn/wiki/wikcnPlanNode0001")
    assert "you cannot open" in wiki.content


async def test_missing_user_scope_and_app_scope(rig: Rig) -> None:
    rig.fake.workspace.missing_scopes[ALICE] = {"docs:document.content:read"}
    out = await rig.run("lark_doc_read", url=DOC)
    assert out.is_error and "/auth" in out.content
    rig.fake.workspace.app_missing_scopes.add("search:docs:read")
    out = await rig.run("lark_doc_search", query="plan")
    assert "developer console" in out.content


async def test_search_finds_only_what_the_asker_can_open(rig: Rig) -> None:
    mine = await rig.run("lark_doc_search", query="plan")
    assert DOC in mine.content and "<h>" not in mine.content
    theirs = await rig.run("lark_doc_search", who=BOB, query="plan")
    assert DOC not in theirs.content and "No document" in theirs.content


async def test_create_and_append_write_real_blocks(rig: Rig) -> None:
    made = await rig.run(
        "lark_doc_create",
        title="Notes",
        content=(
            "# Title\n\n- one\n1. first\n\n```python\nprint(1)\n```\n\n"
            "| k | v |\n|---|---|\n| a | 1 |"
        ),
    )
    assert "Created the document" in made.content
    doc_id = made.content.split("/docx/")[1].split()[0]
    doc = rig.fake.workspace.docs[doc_id]
    assert doc.title == "Notes" and "# Title" in doc.markdown and "```python" in doc.markdown
    assert "| a | 1 |" in doc.markdown and "- one" in doc.markdown
    added = await rig.run(
        "lark_doc_append", url=f"https://a.feishu.cn/docx/{DOC}", content="## More"
    )
    assert "Appended 1 blocks" in added.content
    assert rig.fake.workspace.docs[DOC].markdown.rstrip().endswith("## More")
    other = await rig.run("lark_doc_append", who=BOB, url=DOC, content="spam")
    assert other.is_error and "spam" not in rig.fake.workspace.docs[DOC].markdown


async def test_sheet_read_and_write(rig: Rig) -> None:
    url = "https://a.feishu.cn/sheets/shtcnSheet0000001"
    out = await rig.run("lark_sheet_read", url=url)
    assert "| name | qty |" in out.content and "| pear | 5 |" in out.content
    assert "| apple | 3 |" in (await rig.run("lark_doc_read", url=url)).content
    wrote = await rig.run(
        "lark_sheet_write", url=url + "?sheet=s1", range="A4", values=[["kiwi", 7]]
    )
    assert "Wrote 2 cells" in wrote.content and "s1!A4:B4" in wrote.content
    assert rig.fake.workspace.sheets["shtcnSheet0000001"].tabs["s1"][3] == ["kiwi", 7]
    denied = await rig.run("lark_sheet_read", who=BOB, url=url)
    assert "you cannot open this spreadsheet" in denied.content


async def test_bitable_read_renders_field_types_and_filters(rig: Rig) -> None:
    url = "https://a.feishu.cn/base/bascnBase00000001?table=tblBugs"
    out = await rig.run("lark_bitable_read", url=url, filter="Status = done and Score > 2")
    assert "2 record(s) matching" in out.content
    assert "| rec3 | bug 3 | done | 3 | @Alice | 2026-01-01 | yes | log3.txt |" in out.content
    wiki = await rig.run("lark_bitable_read", url="https://a.feishu.cn/wiki/wikcnBaseNode0001")
    assert "6 record(s)" in wiki.content
    bad = await rig.run("lark_bitable_read", url=url, filter="Colour = red")
    assert bad.is_error and "Colour" in bad.content and "Status" in bad.content


async def test_bitable_write_validates_then_creates_and_updates(rig: Rig) -> None:
    url = "https://a.feishu.cn/base/bascnBase00000001?table=tblBugs"
    tool = rig.tools["lark_bitable_write"]
    ctx = RequestContext("lark", "s", ALICE, False)
    problem = await tool.check_before_asking(ctx, {"url": url, "records": [{"Status": "wip"}]})
    assert problem and "'Status'" in problem and "open, done" in problem
    problem = await tool.check_before_asking(ctx, {"url": url, "records": [{"Nope": 1}]})
    assert problem and "no field 'Nope'" in problem
    assert await tool.check_before_asking(ctx, {"url": url, "records": [{"Score": 2}]}) is None
    made = await rig.run(
        "lark_bitable_write",
        url=url,
        records=[
            {"Title": "new", "Status": "open", "Score": "4", "Owner": BOB, "Due": "2026-02-01"}
        ],
    )
    assert "Added 1 row(s)" in made.content
    table = rig.fake.workspace.bases["bascnBase00000001"].tables["tblBugs"]
    assert table.records[-1]["fields"]["Owner"] == [{"id": BOB}]
    changed = await rig.run(
        "lark_bitable_write", url=url, records=[{"Done": True}], record_ids=["rec0"]
    )
    assert "Changed 1 row(s)" in changed.content and table.records[0]["fields"]["Done"] is True


async def test_tasks_list_create_complete(rig: Rig) -> None:
    made = await rig.run(
        "lark_task", action="create", summary="Ship", due="2026-12-24", assignees=["Bob Li", "me"]
    )
    assert "Created the task “Ship”" in made.content
    listed = await rig.run("lark_task", action="list")
    assert "Ship, due 2026-12-24" in listed.content
    guid = listed.content.split("task_id ")[1].rstrip(")")
    assert "Ship" in (await rig.run("lark_task", who=BOB, action="list")).content
    done = await rig.run("lark_task", action="complete", task_id=guid)
    assert "is done" in done.content
    assert "no open tasks" in (await rig.run("lark_task", action="list")).content
    nobody = await rig.tools["lark_task"].check_before_asking(
        RequestContext("lark", "s", ALICE, False),
        {"action": "create", "summary": "x", "assignees": ["Zed"]},
    )
    assert nobody and "no one named 'Zed'" in nobody


async def test_terminal_and_web_act_as_the_first_owner(home: Path, fake_lark: FakeLark) -> None:
    seed(fake_lark)
    fake_lark.workspace.docs[DOC].readers.add(OWNER)
    tokens = {OWNER: fake_lark.workspace.authorize(OWNER)}
    async with tool_runtime({"owner": {"open_ids": [OWNER]}}) as rt:
        rt.services["workspace"] = workspace_access(rt.http, fake_lark.domain, tokens)
        tool = {t.name: t for t in provide(rt)}["lark_doc_read"]
        out = await tool.invoke(RequestContext.local_owner("s"), {"url": DOC})
    assert "ship it" in str(out) and fake_lark.workspace.bearers() == [OWNER]


LEGACY = "doccnLegacyDoc001"
LEGACY_ROUTE = "GET /open-apis/doc/v2/{token}/raw_content"


async def test_legacy_doc_links_are_read_through_the_old_api(rig: Rig) -> None:
    ws = rig.fake.workspace
    ws.add_doc(LEGACY, "Old minutes\nship it in May\n", {ALICE})
    ws.wiki["wikcnLegacyNode01"] = ("doc", LEGACY, "Minutes (wiki)")
    link = f"https://acme.feishu.cn/docs/{LEGACY}?from=im#part"
    assert has_doc_link(f"see {link}") and parse(link) == parse(f"acme.larksuite.com/docs/{LEGACY}")
    out = await rig.run("lark_doc_read", url=link)
    assert not out.is_error
    assert f"[Lark doc {LEGACY}, page 1 of 1]\nOld minutes\nship it in May\n" in out.content
    assert [(c.route, c.who) for c in ws.calls] == [(LEGACY_ROUTE, ALICE)]
    wiki = await rig.run("lark_doc_read", url="https://a.larksuite.com/wiki/wikcnLegacyNode01")
    assert f"[Lark doc {LEGACY}, page 1 of 1]\n# Minutes (wiki)\n\nOld minutes" in wiki.content
    assert [c.route for c in ws.calls][-1] == LEGACY_ROUTE
    denied = await rig.run("lark_doc_read", who=BOB, url=link)
    assert denied.is_error and "you cannot open this document" in denied.content
    assert "Old minutes" not in denied.content
    appended = await rig.run("lark_doc_append", url=link, content="## More")
    assert appended.content == (
        "Error: lark_doc_append: only documents (docx) can be appended to, not a doc"
    )
    assert "More" not in ws.docs[LEGACY].markdown
    # `/doc/` (singular) is no Lark path: refused before any call, naming the forms it takes
    calls = len(ws.calls)
    wrong = await rig.run("lark_doc_read", url=f"https://acme.feishu.cn/doc/{LEGACY}")
    assert wrong.is_error and "is not a Lark document link: expected …/docx/…" in wrong.content
    assert len(ws.calls) == calls
