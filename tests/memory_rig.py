"""A real core (build_core) on SQLite with a FakeLLM, and contexts of people in one Lark group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from larkbot.agent import Agent
from larkbot.config import parse_settings
from larkbot.consent import ConsentProvider
from larkbot.context import RequestContext
from larkbot.runtime_factory import Core, build_core
from tests.core_helpers import ScriptedConsent

OWNER_ID, ALICE, BOB = "ou_owner", "ou_alice", "ou_bob"
GROUP, OTHER_GROUP = "oc_group", "oc_other"


def person(
    open_id: str, chat: str = GROUP, *, session: str = "", owner: bool = False, name: str = ""
) -> RequestContext:
    """A Lark group turn of `open_id` in `chat` (its own session unless named)."""
    return RequestContext(
        interface="lark",
        session_id=session or f"{chat}:{open_id}",
        sender_id=open_id,
        is_owner=owner,
        chat_id=chat,
        chat_type="group",
        sender_name=name or open_id.removeprefix("ou_").title(),
    )


async def memory_core(url: str, tmp: Path, db_url: str = "", **memory: Any) -> Core:
    """build_core for Lark with memory on (and `memory:` overrides), tools loaded, no plugins."""
    raw: dict[str, Any] = {
        "llm": {"base_url": url, "api_key": "test-key", "model": "fake-model", "stream": False},
        "storage": {"url": db_url or f"sqlite:///{tmp}/larkbot.db"},
        "owner": {"open_ids": [OWNER_ID]},
        "agent": {"fast_path": False},
        "knowledge": {"dir": str(tmp / "knowledge")},
        "memory": memory,
    }
    settings = parse_settings(raw)
    settings.home = tmp
    return await build_core(settings, "lark", plugins=False, mcp=False)


def lark_agent(core: Core, consent: ConsentProvider | None = None) -> Agent:
    """The Lark agent of `core` (recall wired by the core, as `serve` does)."""
    return core.agent(consent or ScriptedConsent(), "lark")


def system_prompt(request: dict[str, Any]) -> str:
    """The system message of one model request the FakeLLM received."""
    return str(request["messages"][0]["content"])
