"""Tiny tools, a scripted consent provider and an agent factory for the core tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larkbot.agent import Agent
from larkbot.config import Settings, parse_settings
from larkbot.consent import ConsentAnswer, ConsentProvider, ConsentRequest
from larkbot.context import RequestContext
from larkbot.events import AgentEvent, FinalAnswer, ToolFinished
from larkbot.policy import AuditSink, Policy
from larkbot.policy.rules import ShareRule
from larkbot.policy.secrets import SecretScrubber
from larkbot.providers.openai_compat import OpenAICompatProvider
from larkbot.storage.db import Database
from larkbot.storage.sessions import SessionStore
from tools.base import BaseTool, ContextTool, ToolResult
from tools.registry import ToolRegistry


class SleepTool(BaseTool):
    """Sleeps, then says so."""

    name = "sleep"
    description = "Sleep for some seconds."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"seconds": {"type": "number"}},
        "required": ["seconds"],
    }

    async def run(self, **kw: Any) -> str:
        await asyncio.sleep(kw["seconds"])
        return f"slept {kw['seconds']}"


class MeetTool(BaseTool):
    """Returns only once `together` calls of it are running at the same time."""

    name = "meet"
    description = "Wait for the others."
    parameters = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self, together: int) -> None:
        self.together, self.arrived, self.met = together, 0, asyncio.Event()

    async def run(self, **kw: Any) -> str:
        self.arrived += 1
        if self.arrived == self.together:
            self.met.set()
        # calls run one after the other never meet; the bound only catches that
        await asyncio.wait_for(self.met.wait(), 30)
        return f"met {self.together}"


class RaisingTool(BaseTool):
    """Always raises."""

    name = "boom"
    description = "Explodes."

    async def run(self, **kw: Any) -> str:
        raise RuntimeError("kaboom")


class HangingTool(BaseTool):
    """Never finishes within its 0.2 s timeout."""

    name = "hang"
    description = "Hangs."
    timeout = 0.2

    async def run(self, **kw: Any) -> str:
        await asyncio.sleep(30)
        return "never"


class EchoTool(ContextTool):
    """Returns its text, and who called it (from the request context)."""

    name = "echo"
    description = "Echo text back."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    fast_path = True

    async def run_with(self, ctx: RequestContext, **kw: Any) -> str:
        return f"{kw['text']} (from {ctx.sender_id} in {ctx.session_id})"


class PrivateEcho(EchoTool):
    """Echo, declared as reading the owner's private data."""

    private_data = True


class WriteTool(BaseTool):
    """Writes a file; consent scoped to the directory; files under `exempt` need none."""

    name = "write"
    description = "Write a file."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    }
    side_effect = True

    def __init__(self, exempt: Path | None = None) -> None:
        self.exempt = exempt

    def consent_check(self, **kw: Any) -> str | None:
        if self.exempt and Path(kw["path"]).is_relative_to(self.exempt):
            return None
        return f"write {kw['path']}"

    def consent_scope(self, **kw: Any) -> str:
        return str(Path(kw["path"]).parent)

    async def run(self, **kw: Any) -> str:
        Path(kw["path"]).write_text(kw["content"])
        return f"wrote {kw['path']}"


class DangerTool(BaseTool):
    """Always needs consent, every time."""

    name = "danger"
    description = "A dangerous action."
    side_effect = True

    def consent_check(self, **kw: Any) -> str | None:
        return "do something dangerous"

    def consent_always(self, **kw: Any) -> bool:
        return True

    async def run(self, **kw: Any) -> str:
        return "done dangerous thing"


class CardTool(BaseTool):
    """Returns a UI payload."""

    name = "card"
    description = "Make a card."

    async def run(self, **kw: Any) -> ToolResult:
        return ToolResult("card sent", ui={"lark_card": {"header": "hi"}})


class WebThing(BaseTool):
    """A tool registered only for the web interface."""

    name = "web_only"
    description = "Search the web for news."
    interfaces = frozenset({"web"})

    async def run(self, **kw: Any) -> str:
        return "web"


@dataclass
class ScriptedConsent:
    """Answers consent requests from a list (default: allow) and records them."""

    answers: list[bool] = field(default_factory=list)
    asked: list[ConsentRequest] = field(default_factory=list)

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        self.asked.append(request)
        allowed = self.answers.pop(0) if self.answers else True
        reason = "ok" if allowed else "the user declined"
        return ConsentAnswer(allowed, reason, for_session=allowed and not request.always)


def settings_for(base_url: str, tmp: Path, **agent: Any) -> Settings:
    """Settings pointing at a FakeLLM and a SQLite file under `tmp`."""
    raw: dict[str, Any] = {
        "llm": {"base_url": base_url, "api_key": "test-key", "model": "fake-model"},
        "storage": {"url": f"sqlite:///{tmp}/larkbot.db"},
    }
    if agent:
        raw["agent"] = agent
    return parse_settings(raw)


@dataclass
class Rig:
    """An agent wired to a FakeLLM with real provider, store and SQLite."""

    agent: Agent
    store: SessionStore
    db: Database
    registry: ToolRegistry
    http: Any

    async def close(self) -> None:
        await self.http.aclose()
        await self.db.close()


async def make_rig(
    base_url: str,
    tmp: Path,
    tools: list[BaseTool],
    consent: ConsentProvider | None = None,
    share: dict[str, ShareRule] | None = None,
    interface: str = "cli",
    audit: AuditSink | None = None,
    policy: Policy | None = None,
    scrubber: SecretScrubber | None = None,
    **agent_settings: Any,
) -> Rig:
    """Build the rig; close it with `await rig.close()`."""
    import httpx

    settings = settings_for(base_url, tmp, **agent_settings)
    db = Database(settings.storage.url)
    store = SessionStore(db)
    await store.init()
    registry = ToolRegistry()
    for tool in tools:
        registry.register(tool)
    http = httpx.AsyncClient()
    provider = OpenAICompatProvider(settings.llm, http, backoff_base=0.01)
    agent = Agent(
        provider,
        registry,
        store,
        consent or ScriptedConsent(),
        policy or Policy(lambda: share or {}),
        settings,
        interface,
        audit=audit,
        scrubber=scrubber,
    )
    return Rig(agent, store, db, registry, http)


def ctx(session: str = "s1", owner: bool = True, interface: str = "cli") -> RequestContext:
    """A request context for tests."""
    return RequestContext(interface=interface, session_id=session, sender_id="u1", is_owner=owner)  # type: ignore[arg-type]


async def collect(agent: Agent, text: str, context: RequestContext) -> list[AgentEvent]:
    """Every event of one turn."""
    return [e async for e in agent.stream_chat(context.session_id, text, context)]


def finished(events: list[AgentEvent]) -> list[ToolFinished]:
    """The turn's ToolFinished events, in order."""
    return [e for e in events if isinstance(e, ToolFinished)]


def final(events: list[AgentEvent]) -> FinalAnswer:
    """The turn's one FinalAnswer (fails unless there is exactly one)."""
    answers = [e for e in events if isinstance(e, FinalAnswer)]
    assert len(answers) == 1, events
    return answers[0]


OWNER = RequestContext.local_owner("s1")


async def call_tool(tool: BaseTool, context: RequestContext = OWNER, **arguments: Any) -> Any:
    """Run a tool directly with an explicit context (the local owner unless given)."""
    return await tool.invoke(context, arguments)
