"""Who may use which tool on an interface. The Lark channel supplies a stricter policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from larkbot.context import RequestContext
from tools.base import BaseTool


class ToolAccess(Protocol):
    """Decides, per sender, which tools are offered and which calls are refused."""

    def refusal(self, tool: BaseTool, ctx: RequestContext) -> str | None:
        """A reason the model can relay when this sender may not call `tool`, else None."""
        ...

    def visible(self, tools: Sequence[BaseTool], ctx: RequestContext) -> list[BaseTool]:
        """The subset of `tools` to advertise to the model for this sender."""
        ...


class AllowAll:
    """Everyone may use every tool of the interface (the terminal, where the user is the owner)."""

    def refusal(self, tool: BaseTool, ctx: RequestContext) -> str | None:
        """Never refuses."""
        return None

    def visible(self, tools: Sequence[BaseTool], ctx: RequestContext) -> list[BaseTool]:
        """Every tool."""
        return list(tools)
