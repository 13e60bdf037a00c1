"""What a `/chat` body asks for: larkbot's own `{"message", "session_id"}` or AG-UI's RunAgentInput.

A body with a `messages` list is the protocol's RunAgentInput (what the official `@ag-ui/client`
HttpAgent posts): its last user message is the new turn, `threadId` the conversation, `runId`
the run. The conversation's history is the server's, so the client's earlier messages are not
replayed; `tools`, `context`, `state`, `forwardedProps` and `resume` are accepted and ignored
(larkbot's agent runs its own tools). A client's conversation id is any 1-128 letters, digits and
`-_.:`; inside larkbot it is a web session (`web:` put in front unless it is there), so no id can
reach a Lark chat's or a schedule's session.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput, TextPart, UserMessage
from pydantic import ValidationError

CLIENT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
WEB_PREFIX = "web:"
MAX_MESSAGE_CHARS = 32_000


class BadChat(Exception):
    """The body cannot start a turn; `status` is the HTTP status to answer."""

    def __init__(self, status: int, msg: str) -> None:
        super().__init__(msg)
        self.status = status


@dataclass(frozen=True)
class ChatRequest:
    """One turn: the text, the client's conversation id (echoed as threadId), the run id to use."""

    message: str
    thread_id: str
    run_id: str | None = None  # None: the server names the run

    @property
    def session_id(self) -> str:
        """The web session the conversation is kept in."""
        return session_key(self.thread_id)


def session_key(client_id: str) -> str:
    """The web session of a client's conversation id (`web:` ids are already one)."""
    if client_id.startswith(WEB_PREFIX) and len(client_id) > len(WEB_PREFIX):
        return client_id
    return WEB_PREFIX + client_id


def new_thread_id() -> str:
    """A fresh web conversation id."""
    return f"{WEB_PREFIX}{uuid.uuid4().hex[:16]}"


def _client_id(value: Any, name: str) -> str:
    if not isinstance(value, str) or not CLIENT_ID.match(value):
        raise BadChat(400, f"`{name}` must be 1-128 letters, digits and -_.:")
    return value


def _checked_message(message: Any, name: str) -> str:
    if not isinstance(message, str) or not message.strip():
        raise BadChat(400, f"`{name}` must be a non-empty string")
    if len(message) > MAX_MESSAGE_CHARS:
        raise BadChat(413, f"`{name}` is over {MAX_MESSAGE_CHARS} characters")
    return message


def _user_text(message: UserMessage) -> str:
    """The text of a user message (text parts joined; other parts are not taken)."""
    if isinstance(message.content, str):
        return message.content
    return "\n".join(p.text for p in message.content if isinstance(p, TextPart))


def from_run_agent_input(body: dict[str, Any]) -> ChatRequest:
    """The turn an AG-UI RunAgentInput asks for: its last user message."""
    try:
        run = RunAgentInput.model_validate(body)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadChat(400, f"not a valid RunAgentInput: {where}: {first['msg']}") from None
    users = [m for m in run.messages if isinstance(m, UserMessage)]
    if not users:
        raise BadChat(400, "RunAgentInput.messages has no user message to answer")
    text = _checked_message(_user_text(users[-1]), "the last user message")
    return ChatRequest(text, _client_id(run.thread_id, "threadId"), _client_id(run.run_id, "runId"))


def parse_chat(body: dict[str, Any]) -> ChatRequest:
    """larkbot's body or a RunAgentInput (told apart by its `messages` list); BadChat if neither."""
    if isinstance(body.get("messages"), list):
        return from_run_agent_input(body)
    message = _checked_message(body.get("message"), "message")
    session_id = body.get("session_id")
    if not session_id:
        return ChatRequest(message, new_thread_id())
    return ChatRequest(message, _client_id(session_id, "session_id"))
