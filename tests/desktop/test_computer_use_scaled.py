"""A screen larger than 1280×800: the model sees it scaled, its coordinates are scaled back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from tests.builtin_rt import tool_runtime
from tests.desktop.harness import TkApp, find_colour
from tools.builtin.computer_use import ComputerUseTool, provide
from tools.desktop.xinput import X11Display
from tools.desktop.xvfb import Xvfb

RED = (255, 0, 0)


@pytest.fixture(scope="module")
def xvfb() -> Iterator[Xvfb]:
    """This module's own Xvfb, 1.5 times the model's 1280×800 in each direction."""
    server = Xvfb("1920x1200")
    asyncio.run(server.start())
    try:
        yield server
    finally:
        asyncio.run(server.stop())


async def test_click_on_a_scaled_screenshot_lands_on_the_button(
    home: Path, display: X11Display, tk_app: TkApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XAUTHORITY", display.xauthority)
    raw = {"computer_use": {"enabled": True, "display": display.name, "settle_seconds": 0.05}}
    async with tool_runtime(raw) as rt:
        (tool,) = provide(rt)
        assert isinstance(tool, ComputerUseTool)
        try:
            found = None
            for _ in range(20):  # bounded: the window may still be drawing
                shot = await tool.run(action="screenshot")
                assert "screen 1920×1200, shown as 1280×800" in shot.content
                found = find_colour(shot.attachments[0].path, RED)
                if found:
                    break
                await asyncio.sleep(0.1)
            assert found is not None
            with Image.open(shot.attachments[0].path) as image:
                assert image.size == (1280, 800)
            x, y = found  # the button is at x 300..~400 on screen: about 200..267 here
            assert x < 300, found
            clicked = await tool.run(action="click", x=x, y=y)
            assert not clicked.is_error, clicked.content
            assert tk_app.wait_for(lambda s: s.get("label") == "Clicked 1")
            assert f"cursor at ({x}, {y})" in clicked.content  # reported back in model pixels
            outside = await tool.run(action="click", x=1280, y=10)  # on screen, not in the shot
            assert outside.is_error and "x must be 0..1279 and y 0..799" in outside.content
        finally:
            await tool.aclose()
