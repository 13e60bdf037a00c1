"""What a sender may see of a shared history: other people's private tool results are hidden.

A Lark group is one session, so the owner's `file_read` or calendar results stay in the history
the model sees on the next turn — whoever sends it. For a sender who may not use a tool, the
stored results of that tool are replaced by a placeholder before the model sees them.
"""

from __future__ import annotations

from collections.abc import Callable

from larkbot.providers.base import Message


def hidden_result(tool_name: str) -> str:
    """The placeholder a hidden tool result is replaced with."""
    return f"[hidden: this {tool_name or 'tool'} result is private to the bot's owner]"


def hide_private_results(history: list[Message], may_see: Callable[[str], bool]) -> list[Message]:
    """A copy of `history` with tool results replaced where `may_see(tool_name)` is False."""
    names: dict[str, str] = {}
    visible: list[Message] = []
    for message in history:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
        elif message.get("role") == "tool":
            name = names.get(str(message.get("tool_call_id")), "")
            if not may_see(name):
                message = {**message, "content": hidden_result(name)}
        visible.append(message)
    return visible
