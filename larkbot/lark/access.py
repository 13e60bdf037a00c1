"""Who may use which tool in Lark: owners everything; others no side effects, no private data.

The decision depends only on the Lark identity of the message's sender (`ctx.is_owner`,
`ctx.sender_id`, set by the dispatcher from the verified event), never on what the model says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from larkbot.config import OwnerConfig
from larkbot.context import RequestContext
from larkbot.lark.audit import AuditLog
from tools.base import BaseTool


class LarkAccessPolicy:
    """`ToolAccess` for Lark; every call decision is written to the audit log."""

    def __init__(self, owner_config: Callable[[], OwnerConfig], audit: AuditLog | None) -> None:
        self._owner_config = owner_config
        self.audit = audit

    def _decide(self, tool: BaseTool, ctx: RequestContext) -> tuple[bool, str]:
        if ctx.is_owner:
            return True, "owner"
        if tool.side_effect:
            # The design rule: side effects are owner-only and no config can open them.
            return False, (
                f"refused: {tool.name} changes things on the owner's machine or accounts and only "
                "the bot's owner may use it. Tell the user you cannot do this for them."
            )
        if tool.private_data:
            share = self._owner_config().share.get(tool.name)
            if share == "everyone" or (isinstance(share, list) and ctx.sender_id in share):
                return True, "opened by owner.share"
            return False, (
                f"refused: {tool.name} reads the owner's private data and the owner has not "
                "shared it with this user. Tell the user you cannot look this up for them."
            )
        return True, "not restricted"

    def refusal(self, tool: BaseTool, ctx: RequestContext) -> str | None:
        """The reason this sender may not call `tool`, or None when allowed."""
        allowed, reason = self._decide(tool, ctx)
        return None if allowed else reason

    def audit_call(
        self, tool: BaseTool, ctx: RequestContext, arguments: Any, refusal: str | None
    ) -> None:
        """Record the guard's decision on one call (the agent's gate calls this after `refusal`)."""
        if self.audit is not None:
            allowed, reason = refusal is None, refusal or self._decide(tool, ctx)[1]
            self.audit.record(ctx.sender_id, ctx.chat_id, tool.name, arguments, allowed, reason)

    def visible(self, tools: Sequence[BaseTool], ctx: RequestContext) -> list[BaseTool]:
        """Only the tools this sender may call are advertised to the model."""
        return [t for t in tools if self._decide(t, ctx)[0]]
