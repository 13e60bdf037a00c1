"""A workspace test rig: FakeLark seeded with Alice's objects, the tools, a runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from larkbot.context import RequestContext
from tests.builtin_rt import tool_runtime
from tests.fakes.lark_server import FakeLark
from tests.fakes.lark_workspace_data import FakeBase, FakeSheet, FakeTable
from tests.workspace_access import workspace_access
from tools.base import BaseTool, ToolResult
from tools.builtin.workspace import provide
from tools.runtime import ToolRuntime

ALICE, BOB, CAROL, OWNER = "ou_alice", "ou_bob", "ou_carol", "ou_owner"
DOC = "doxcnAliceDoc0001"
LONG = "doxcnLongDoc00001"


@dataclass
class Rig:
    """The tools, the fake, and the runtime they share."""

    fake: FakeLark
    rt: ToolRuntime
    tools: dict[str, BaseTool]

    async def run(self, name: str, who: str = ALICE, **arguments: Any) -> ToolResult:
        """Call a tool as `who` in Lark; always a ToolResult."""
        ctx = RequestContext("lark", "s", who, who == OWNER, chat_id="oc_g", chat_type="group")
        out = await self.tools[name].invoke(ctx, arguments)
        return out if isinstance(out, ToolResult) else ToolResult(out)


def seed(fake: FakeLark) -> None:
    """Alice's document, sheet, base and a wiki page; Bob can open none of them."""
    ws = fake.workspace
    ws.add_doc(DOC, "# Plan\n\n- ship it\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n", {ALICE}, "Plan")
    ws.add_doc(LONG, "".join(f"line {i} " + "x" * 60 + "\n" for i in range(600)), {ALICE})
    ws.wiki["wikcnPlanNode0001"] = ("docx", DOC, "Plan (wiki)")
    ws.wiki["wikcnBaseNode0001"] = ("bitable", "bascnBase00000001", "Bugs")
    ws.sheets["shtcnSheet0000001"] = FakeSheet(
        {ALICE}, {ALICE}, {"s1": [["name", "qty"], ["apple", 3], ["pear", 5]]}
    )
    status = {"options": [{"name": "open"}, {"name": "done"}]}
    fields = [
        {"field_name": "Title", "type": 1},
        {"field_name": "Status", "type": 3, "property": status},
        {"field_name": "Score", "type": 2},
        {"field_name": "Owner", "type": 11},
        {"field_name": "Due", "type": 5},
        {"field_name": "Done", "type": 7},
        {"field_name": "Files", "type": 17},
    ]
    records = [
        {
            "record_id": f"rec{i}",
            "fields": {
                "Title": [{"type": "text", "text": f"bug {i}"}],
                "Status": "done" if i % 2 else "open",
                "Score": i,
                "Owner": [{"id": ALICE, "name": "Alice"}],
                "Due": 1767196800000,  # 2026-01-01 00:00 in Asia/Shanghai
                "Done": bool(i % 2),
                "Files": [{"name": f"log{i}.txt", "file_token": "f"}],
            },
        }
        for i in range(6)
    ]
    ws.bases["bascnBase00000001"] = FakeBase(
        {ALICE}, {ALICE}, {"tblBugs": FakeTable(fields, records)}
    )
    ws.people.append({"open_id": BOB, "name": "Bob Li"})


@asynccontextmanager
async def open_rig(fake_lark: FakeLark, raw: dict[str, Any] | None = None) -> AsyncIterator[Rig]:
    """Alice and Bob have authorized; Carol has not (LARKBOT_HOME must be a tmp dir)."""
    seed(fake_lark)
    tokens = {p: fake_lark.workspace.authorize(p) for p in (ALICE, BOB)}
    async with tool_runtime({"owner": {"open_ids": [OWNER]}, **(raw or {})}) as rt:
        rt.services["workspace"] = workspace_access(rt.http, fake_lark.domain, tokens)
        yield Rig(fake_lark, rt, {t.name: t for t in provide(rt)})
