"""`/status` for the owner: which model answers, its detected traits, fallbacks and token usage."""

from __future__ import annotations

import time

from larkbot.config import Settings
from larkbot.providers.capabilities import sees_images
from larkbot.providers.fallback import FallbackChain
from larkbot.usage import UsageStore, today


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def model_lines(settings: Settings, chain: FallbackChain) -> list[str]:
    """The configured endpoints with their profiles, and the recent switches."""
    wire = chain.primary.wire
    lines = [
        f"Model: {settings.llm.model} at {settings.llm.base_url} (provider {wire.profile.name})",
        f"  thinking {_yes(wire.thinking)}, reasoning sent back: {wire.echo}, "
        f"vision {_yes(sees_images(settings))}, tools {_yes(wire.traits.tools)}, "
        f"context {wire.context_tokens} tokens",
    ]
    for fb in chain.providers[1:]:
        lines.append(f"Fallback: {fb.cfg.model} at {fb.cfg.base_url} ({fb.wire.profile.name})")
    status = chain.status
    if status.last_model:
        lines.append(f"Last answer from: {status.last_model}")
    for switch in status.switches[-3:]:
        ago = int(time.time() - switch.at)
        lines.append(
            f"Switched {ago} s ago: {switch.from_model} → {switch.to_model} ({switch.reason})"
        )
    return lines


async def status_text(
    settings: Settings, chain: FallbackChain, usage: UsageStore, session_id: str
) -> str:
    """The whole /status reply."""
    chat = await usage.totals(session_id=session_id)
    day = await usage.totals(day=today())
    lines = model_lines(settings, chain)
    lines.append(f"This chat: {chat.line()}")
    lines.append(f"Today (UTC): {day.line()}")
    return "\n".join(lines)
