"""Who may use the workspace tools: `workspace.members` × owner/member × authorized or not.

Reads run for anyone who has authorized when members is read or write (owners always); writes
are the owners' (and everyone's with members: write), each confirmed by the asker alone;
`workspace.enabled: false` offers none of them. Results read with one person's access are
hidden from the others in a shared (group) history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from larkbot.config_sections import WorkspaceConfig
from larkbot.context import RequestContext
from larkbot.policy import Allow, Ask, Policy, Refuse
from larkbot.policy.redact import hide_private_results
from tests.fakes.lark_server import FakeLark
from tests.workspace_rig import ALICE, DOC, OWNER, Rig, open_rig

CAROL = "ou_carol"  # has not authorized
READ = ("lark_doc_read", {"url": DOC})
WRITE = ("lark_doc_append", {"url": DOC, "content": "## added"})

# members, sender, call, authorized → decision, then (when it runs) what the result says
TABLE: list[tuple[str, str, tuple[str, dict[str, Any]], bool, str, str]] = [
    ("off", OWNER, READ, True, "allow", "ship it"),
    ("off", ALICE, READ, True, "refuse", "only its owners"),
    ("off", ALICE, WRITE, True, "refuse", "only its owners"),
    ("read", ALICE, READ, True, "allow", "ship it"),
    ("read", CAROL, READ, False, "allow", "send /auth"),
    ("read", ALICE, WRITE, True, "refuse", "workspace.members is read"),
    ("read", OWNER, WRITE, True, "ask", ""),
    ("read", CAROL, WRITE, False, "refuse", "workspace.members is read"),
    ("write", ALICE, READ, True, "allow", "ship it"),
    ("write", ALICE, WRITE, True, "ask", ""),
    ("write", CAROL, WRITE, False, "ask", "send /auth"),  # no card: the precheck says /auth
    ("write", OWNER, READ, False, "allow", "send /auth"),
]


@pytest.fixture
async def rig(home: Path, fake_lark: FakeLark) -> AsyncIterator[Rig]:
    """The seeded workspace; the owner can open Alice's document too."""
    async with open_rig(fake_lark) as opened:
        fake_lark.workspace.docs[DOC].readers.add(OWNER)
        yield opened


def policy(members: str, enabled: bool = True) -> Policy:
    """The policy with this `workspace:` section."""
    section = WorkspaceConfig(enabled=enabled, members=members)  # type: ignore[arg-type]
    return Policy(lambda: {}, workspace=lambda: section)


def ctx_of(sender: str, *untrusted: str) -> RequestContext:
    """A group message from `sender`."""
    base = RequestContext("lark", "s", sender, sender == OWNER, "oc_g", "group", message_id="om")
    return base.with_untrusted(*untrusted)


@pytest.mark.parametrize(("members", "sender", "call", "authorized", "decision", "says"), TABLE)
async def test_members_table(
    rig: Rig,
    members: str,
    sender: str,
    call: tuple[str, dict[str, Any]],
    authorized: bool,
    decision: str,
    says: str,
) -> None:
    if sender == OWNER and not authorized:
        rig.rt.services["workspace"].tokens.tokens.pop(OWNER, None)
    elif sender == OWNER:
        rig.rt.services["workspace"].tokens.tokens[OWNER] = rig.fake.workspace.authorize(OWNER)
    name, arguments = call
    tool, ctx = rig.tools[name], ctx_of(sender)
    got = policy(members).decide(tool, arguments, ctx)
    kind = {Allow: "allow", Refuse: "refuse", Ask: "ask"}[type(got)]
    assert kind == decision, got
    if isinstance(got, Refuse):
        assert says in got.reason
        assert tool not in policy(members).visible([tool], ctx) or name == WRITE[0]
        return
    if isinstance(got, Ask):  # the asker, and only the asker, confirms; asked every time
        assert got.confirm_by == sender and got.always and "## added" in got.prompt
        problem = await tool.check_before_asking(ctx, arguments)
        assert (says in (problem or "")) if says else problem is None
        return
    result = await rig.run(name, who=sender, **arguments)
    assert says in result.content


def test_disabled_offers_nothing_even_to_owners(rig: Rig) -> None:
    tools = list(rig.tools.values())
    off = policy("write", enabled=False)
    assert off.visible(tools, ctx_of(OWNER)) == []
    assert isinstance(off.decide(rig.tools["lark_doc_read"], {"url": DOC}, ctx_of(OWNER)), Refuse)
    assert len(policy("read").visible(tools, ctx_of(ALICE))) == len(tools)
    assert policy("off").visible(tools, ctx_of(ALICE)) == []


def test_untrusted_text_makes_the_write_name_it_on_the_asker_card(rig: Rig) -> None:
    source = "lark_doc_read result (text no owner wrote)"
    got = policy("write").decide(rig.tools[WRITE[0]], WRITE[1], ctx_of(ALICE, source))
    assert isinstance(got, Ask) and got.sources == (source,) and got.confirm_by == ALICE
    assert source in got.prompt
    read = policy("write").decide(rig.tools[READ[0]], READ[1], ctx_of(ALICE, source))
    assert isinstance(read, Allow)  # reading more is no side effect


def test_task_list_reads_and_task_create_writes(rig: Rig) -> None:
    task = rig.tools["lark_task"]
    assert isinstance(policy("read").decide(task, {"action": "list"}, ctx_of(ALICE)), Allow)
    made = policy("read").decide(task, {"action": "create", "summary": "x"}, ctx_of(ALICE))
    assert isinstance(made, Refuse)


def test_a_persons_results_are_hidden_from_the_others_in_a_group() -> None:
    history = [
        {"role": "user", "content": "[Alice] read it", "sender": {"id": ALICE}},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "function": {"name": "lark_doc_read", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "SECRET PLAN"},
    ]

    def as_asker(name: str) -> bool:
        return name.startswith("lark_")

    for_bob = hide_private_results(history, lambda n: True, as_asker, "ou_bob")
    assert "SECRET PLAN" not in str(for_bob)
    for_alice = hide_private_results(history, lambda n: True, as_asker, ALICE)
    assert "SECRET PLAN" in str(for_alice)
