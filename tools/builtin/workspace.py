"""The Lark workspace tools (tools/workspace/), acting as the person who asks."""

from __future__ import annotations

from tools.base import BaseTool
from tools.runtime import ToolRuntime
from tools.workspace.bitable import BitableRead, BitableWrite
from tools.workspace.docs import DocAppend, DocCreate, DocRead, DocSearch
from tools.workspace.sheets import SheetRead, SheetWrite
from tools.workspace.tasks import TaskTool


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """All nine; the policy hides them when `workspace.enabled` is false."""
    kinds = (DocRead, DocSearch, DocCreate, DocAppend, SheetRead, SheetWrite)
    return [k(rt) for k in (*kinds, BitableRead, BitableWrite, TaskTool)]
