"""Content parts: the history's image budget, local references, and which models see images."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from PIL import Image

from larkbot.config import Settings
from larkbot.content_parts import (
    local_image_part,
    materialize,
    text_of,
    text_part,
)
from larkbot.providers.capabilities import sees_images
from larkbot.storage.sessions import message_chars


def png(path: Path) -> Path:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (1, 2, 3)).save(buf, "PNG")
    path.write_bytes(buf.getvalue())
    return path


def user(text: str, *images: Path) -> dict[str, Any]:
    return {"role": "user", "content": [text_part(text), *(local_image_part(p) for p in images)]}


def test_only_the_newest_images_are_inlined_older_become_notes(tmp_path: Path) -> None:
    shots = [png(tmp_path / f"{i}.png") for i in range(6)]
    history = [user(f"turn {i}", shot) for i, shot in enumerate(shots)]
    ready = materialize(history, keep=4)
    inlined = [isinstance(m["content"], list) for m in ready]
    assert inlined == [False, False, True, True, True, True]
    assert ready[0]["content"] == "turn 0\n[an earlier image, no longer shown]"
    url = ready[-1]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == shots[-1].read_bytes()
    assert history[-1]["content"][1]["image_url"]["url"].startswith("larkbot-file://")  # intact


def test_no_images_for_a_blind_model_and_missing_files_become_notes(tmp_path: Path) -> None:
    history = [user("look", png(tmp_path / "a.png")), user("and", tmp_path / "deleted.png")]
    assert [m["content"] for m in materialize(history, keep=0)] == [
        "look\n[an earlier image, no longer shown]",
        "and\n[an earlier image, no longer shown]",
    ]
    assert materialize(history, keep=4)[1]["content"] == "and\n[an earlier image, no longer shown]"


def test_an_image_costs_a_fixed_share_of_the_history_budget(tmp_path: Path) -> None:
    message = user("hello", png(tmp_path / "a.png"))
    assert message_chars(message) == len("hello") + 1000 + 10
    assert text_of(message["content"]) == "hello" and text_of("plain") == "plain"


def test_which_models_see_images() -> None:
    def sees(model: str, vision: bool | str) -> bool:
        return sees_images(Settings.model_validate({"llm": {"model": model, "vision": vision}}))

    for model in ("gpt-4o-mini", "gpt-4.1", "claude-3-5-sonnet", "gemini-2.0-flash", "qwen-vl-max"):
        assert sees(model, "auto"), model
    for model in ("deepseek-chat", "o3-mini", "qwen-turbo", "gpt-3.5-turbo"):
        assert not sees(model, "auto"), model
    assert sees("deepseek-chat", True) and not sees("gpt-4o", False)
