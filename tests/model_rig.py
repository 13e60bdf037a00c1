"""An agent on the real provider chain (profiles, fallbacks), SQLite history and usage store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from larkbot.agent import Agent
from larkbot.config import Settings, parse_settings
from larkbot.context import RequestContext
from larkbot.events import AgentEvent, ErrorEvent, FinalAnswer, TextDelta, ThinkingDelta
from larkbot.policy import Policy
from larkbot.providers.fallback import FallbackChain
from larkbot.storage.db import Database
from larkbot.storage.sessions import SessionStore
from larkbot.usage import UsageStore
from tests.core_helpers import EchoTool, ScriptedConsent
from tools.registry import ToolRegistry


@dataclass
class ModelRig:
    """What a model test drives and inspects."""

    settings: Settings
    agent: Agent
    chain: FallbackChain
    store: SessionStore
    usage: UsageStore
    db: Database
    http: httpx.AsyncClient

    async def turn(
        self, text: str, session: str = "s1", ctx: RequestContext | None = None
    ) -> tuple[str, str, list[AgentEvent]]:
        """Run one turn: (answer, streamed text, every event); an ErrorEvent's text as answer."""
        ctx = ctx or RequestContext.local_owner(session)
        events = [e async for e in self.agent.stream_chat(session, text, ctx)]
        answer = ""
        for e in events:
            if isinstance(e, FinalAnswer):
                answer = e.text
            elif isinstance(e, ErrorEvent):
                answer = e.message
        streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
        return answer, streamed, events

    async def close(self) -> None:
        """Close the HTTP client and the database."""
        await self.http.aclose()
        await self.db.close()


def thinking_of(events: list[AgentEvent]) -> str:
    """The thinking text shown to the user (ThinkingDelta events)."""
    return "".join(e.text for e in events if isinstance(e, ThinkingDelta))


async def model_rig(tmp: Path, llm: dict[str, Any], **agent: Any) -> ModelRig:
    """Build the rig from an `llm:` section (and optional `agent:` keys)."""
    raw: dict[str, Any] = {
        "llm": {"api_key": "test-key", "max_retries": 2, **llm},
        "storage": {"url": f"sqlite:///{tmp}/larkbot.db"},
    }
    if agent:
        raw["agent"] = agent
    settings = parse_settings(raw)
    db = Database(settings.storage.url)
    store, usage = SessionStore(db), UsageStore(db, settings.llm.prices)
    await store.init()
    await usage.init()
    registry = ToolRegistry()
    registry.register(EchoTool())
    http = httpx.AsyncClient()
    chain = FallbackChain.from_config(settings.llm, http, backoff_base=0.01)
    policy = Policy(lambda: {})
    agent_obj = Agent(
        chain, registry, store, ScriptedConsent(), policy, settings, "cli", usage=usage
    )
    return ModelRig(settings, agent_obj, chain, store, usage, db, http)
