"""One Lark turn's answer: a chat command's text, or the agent run on the message's input.

Every failure becomes a short reason safe to show in the chat ("it took too long."); only a
cancellation (recall, /stop, drain) goes on up.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

from larkbot.content_parts import Content
from larkbot.context import RequestContext
from larkbot.events import AgentEvent, ErrorEvent, FinalAnswer
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.turns import TOOK_TOO_LONG
from larkbot.lark.turns.commands import Commands
from larkbot.lark.turns.turn_input import TurnInputs
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.turns.answer")


class Agent(Protocol):
    """What a Lark turn needs of the agent loop."""

    def stream_chat(
        self, session_id: str, user_input: Content, ctx: RequestContext
    ) -> AsyncIterator[AgentEvent]: ...


async def answer_command(
    commands: Commands, command: tuple[str, str], msg: InboundMessage, ctx: RequestContext
) -> FinalAnswer | str:
    """Run a chat command (/help, /new, …)."""
    try:
        return FinalAnswer(await commands.run(command[0], command[1], msg, ctx.session_id))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.error("lark_command_failed", message_id=msg.message_id, exc_info=True)
        return "an internal error occurred."


async def answer_message(
    agent: Agent,
    inputs: TurnInputs | None,
    msg: InboundMessage,
    ctx: RequestContext,
    view: Any,
    timeout: float,
) -> FinalAnswer | str:
    """Build the model's input (names, media, quotes), run the agent, stream into `view`."""
    try:
        async with asyncio.timeout(timeout):
            user_input: Content = msg.text
            if inputs is not None:  # the sender's uploads come back in the context
                user_input, ctx = await inputs.build(msg, ctx)
            final: FinalAnswer | None = None
            error = "the turn ended without an answer"
            async for event in agent.stream_chat(ctx.session_id, user_input, ctx):
                if isinstance(event, FinalAnswer):
                    final = event
                    continue
                if isinstance(event, ErrorEvent):
                    error = event.message
                await view.on_event(event)
        return final if final is not None else error
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        log.warning("lark_turn_timeout", message_id=msg.message_id)
        return TOOK_TOO_LONG
    except Exception:
        log.error("lark_turn_failed", message_id=msg.message_id, exc_info=True)
        return "an internal error occurred."
