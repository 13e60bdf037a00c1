"""Images tools attach reach the model as image parts when llm.vision allows; never the history."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from larkbot.agent import Agent
from larkbot.config import parse_settings
from larkbot.events import AttachmentReady
from larkbot.policy import Policy
from larkbot.providers.openai_compat import OpenAICompatProvider
from larkbot.storage.db import Database
from larkbot.storage.sessions import SessionStore
from tests.core_helpers import ScriptedConsent, collect, ctx
from tests.fakes.llm import FakeLLM
from tools.base import Attachment, BaseTool, ToolResult
from tools.registry import ToolRegistry


class ShotTool(BaseTool):
    """Writes a small PNG and attaches it, like a screenshot."""

    name = "shot"
    description = "Take a picture."

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    async def run(self, **kw: Any) -> ToolResult:
        self.count += 1
        path = self.folder / f"shot{self.count}.png"
        Image.new("RGB", (4, 3), (self.count, 0, 0)).save(path)
        return ToolResult(
            "Screenshot attached.", attachments=(Attachment(str(path), "image", "image/png"),)
        )


def image_parts(request: dict[str, Any]) -> list[str]:
    return [
        part["image_url"]["url"]
        for m in request["messages"]
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]


async def run_turn(
    fake_llm: FakeLLM, tmp_path: Path, vision: Any, model: str = "m"
) -> tuple[list, Any, Any]:
    llm = {"base_url": fake_llm.base_url, "api_key": "k", "model": model, "vision": vision}
    settings = parse_settings(
        {
            "llm": llm,
            "storage": {"url": f"sqlite:///{tmp_path}/larkbot.db"},
        }
    )
    db = Database(settings.storage.url)
    store = SessionStore(db)
    await store.init()
    registry = ToolRegistry()
    registry.register(ShotTool(tmp_path))
    async with httpx.AsyncClient() as http:
        provider = OpenAICompatProvider(settings.llm, http, backoff_base=0.01)
        agent = Agent(provider, registry, store, ScriptedConsent(), Policy(dict), settings, "cli")
        fake_llm.reply_tools(("shot", {})).reply_tools(("shot", {})).reply_text("I see red")
        events = await collect(agent, "look", ctx())
        history = await store.load("s1")
    await db.close()
    return events, history, fake_llm.requests


@pytest.mark.parametrize(("vision", "model"), [(True, "m"), ("auto", "gpt-4o-mini")])
async def test_vision_on_sends_only_the_newest_round_images(
    fake_llm: FakeLLM, tmp_path: Path, vision: Any, model: str
) -> None:
    events, history, requests = await run_turn(fake_llm, tmp_path, vision, model)
    assert [e.attachment.path for e in events if isinstance(e, AttachmentReady)] == [
        str(tmp_path / "shot1.png"),
        str(tmp_path / "shot2.png"),
    ]
    assert image_parts(requests[0]) == []
    (second,) = image_parts(requests[1])
    (third,) = image_parts(requests[2])  # shot1's image is gone, shot2's is there
    prefix = "data:image/png;base64,"
    assert base64.b64decode(second.removeprefix(prefix)) == (tmp_path / "shot1.png").read_bytes()
    assert base64.b64decode(third.removeprefix(prefix)) == (tmp_path / "shot2.png").read_bytes()
    assert all(isinstance(m.get("content"), str | None) for m in history)  # no images saved
    assert [m["content"] for m in history if m["role"] == "tool"] == ["Screenshot attached."] * 2


@pytest.mark.parametrize(("vision", "model"), [(False, "gpt-4o"), ("auto", "deepseek-chat")])
async def test_vision_off_sends_no_images(
    fake_llm: FakeLLM, tmp_path: Path, vision: Any, model: str
) -> None:
    events, _, requests = await run_turn(fake_llm, tmp_path, vision, model)
    assert sum(isinstance(e, AttachmentReady) for e in events) == 2  # the user still gets them
    assert all(image_parts(r) == [] for r in requests)
