"""Chat commands answered without the model: /new, /whoami, /help, /claim <code>, /status."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from larkbot.lark.inbound import InboundMessage
from larkbot.lark.owners import Owners

HELP = """I'm an AI assistant. Ask me anything in a direct message, or @-mention me in a group.
Commands:
/new: start a fresh conversation (forgets this chat's history and approvals)
/whoami: show your open_id and whether you own this bot
/help: this message
/claim <code>: become the owner with the pairing code from the server log (DM only, once)
/status: the model, its fallbacks and token usage (owners only)"""

COMMANDS = frozenset({"/new", "/whoami", "/help", "/claim", "/status"})


def parse_command(text: str) -> tuple[str, str] | None:
    """("/name", "rest") when the message is one of our commands, else None (goes to the model)."""
    head, _, rest = text.strip().partition(" ")
    name = head.lower()
    return (name, rest.strip()) if name in COMMANDS else None


class Commands:
    """Runs a parsed command and returns the text to reply."""

    def __init__(
        self,
        owners: Owners,
        reset: Callable[[str], Awaitable[None]],
        status: Callable[[str], Awaitable[str]] | None = None,
    ) -> None:
        self.owners = owners
        self.reset = reset  # Agent.reset: history, consent grants, activated tools
        self.status = status  # model_status.status_text for a session

    async def run(self, name: str, arg: str, msg: InboundMessage, session_id: str) -> str:
        """Execute `name` for the sender of `msg` in `session_id`."""
        if name == "/new":
            await self.reset(session_id)
            return "Started a fresh conversation."
        if name == "/whoami":
            owner = await self.owners.check(msg.sender_open_id)
            role = "the owner of this bot" if owner else "not an owner of this bot"
            return f"Your open_id is {msg.sender_open_id}; you are {role}."
        if name == "/claim":
            if not arg:
                return "Usage: /claim <code> (the pairing code is in the server log)."
            result = await self.owners.claim(msg.sender_open_id, arg, msg.is_dm)
            return result.message
        if name == "/status":
            if not await self.owners.check(msg.sender_open_id):
                return "Only an owner of this bot may see /status."
            if self.status is None:
                return "Status is not available here."
            return await self.status(session_id)
        return HELP
