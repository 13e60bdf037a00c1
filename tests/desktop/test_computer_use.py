"""computer_use under a real Xvfb with a real X client (a Tk window): see, click, type, drag."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.builtin_rt import tool_runtime
from tests.desktop.harness import TkApp, find_colour
from tools.base import ToolResult
from tools.builtin.computer_use import ComputerUseTool, provide
from tools.desktop.xinput import X11Display

RED, YELLOW, BLUE = (255, 0, 0), (255, 255, 0), (0, 0, 255)


@pytest.fixture
async def tool(
    home: Path, display: X11Display, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ComputerUseTool]:
    monkeypatch.setenv("XAUTHORITY", display.xauthority)  # as for any X server with a cookie
    raw = {"computer_use": {"enabled": True, "display": display.name, "settle_seconds": 0.05}}
    async with tool_runtime(raw) as rt:
        (made,) = provide(rt)
        assert isinstance(made, ComputerUseTool)
        try:
            yield made
        finally:
            await made.aclose()


async def act(tool: ComputerUseTool, **kw: Any) -> ToolResult:
    result = await tool.run(**kw)
    assert not result.is_error, result.content
    return result


async def locate(tool: ComputerUseTool, rgb: tuple[int, int, int]) -> tuple[int, int]:
    """Where a colour is in a fresh screenshot (retried while the window draws, bounded)."""
    for _ in range(20):
        shot = await act(tool, action="screenshot")
        (image,) = shot.attachments
        found = find_colour(image.path, rgb)
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"colour {rgb} never appeared on screen")


async def test_screenshot_is_an_image_attachment_with_a_summary(
    tool: ComputerUseTool, tk_app: TkApp
) -> None:
    result = await act(tool, action="screenshot")
    (image,) = result.attachments
    assert image.kind == "image" and image.mime == "image/png"
    assert Path(image.path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "screen 1280×800" in result.content and "cursor at (" in result.content
    assert find_colour(image.path, RED) is not None  # the Tk window is in it


async def test_click_the_button_found_in_the_screenshot(
    tool: ComputerUseTool, tk_app: TkApp
) -> None:
    x, y = await locate(tool, RED)
    result = await act(tool, action="click", x=x, y=y)
    assert tk_app.wait_for(lambda s: s.get("label") == "Clicked 1")
    assert f"click at ({x}, {y})" in result.content and f"cursor at ({x}, {y})" in result.content
    await act(tool, action="double_click", x=x, y=y)
    assert tk_app.wait_for(lambda s: s.get("label") == "Clicked 3")


async def test_type_ascii_and_chinese_into_the_entry(tool: ComputerUseTool, tk_app: TkApp) -> None:
    x, y = await locate(tool, YELLOW)
    await act(tool, action="click", x=x, y=y)
    await act(tool, action="type", text="Hello -x 1+1")
    assert tk_app.wait_for(lambda s: s.get("entry") == "Hello -x 1+1")
    await act(tool, action="type", text=" 你好，世界 ünï")
    assert tk_app.wait_for(lambda s: s.get("entry") == "Hello -x 1+1 你好，世界 ünï")


async def test_key_chords_string_and_list_forms(tool: ComputerUseTool, tk_app: TkApp) -> None:
    x, y = await locate(tool, YELLOW)
    await act(tool, action="click", x=x, y=y)
    result = await act(tool, action="key", keys="ctrl+k")
    assert "pressed ctrl+k" in result.content
    await act(tool, action="key", keys=["CTRL", "SHIFT", "K"])
    assert tk_app.wait_for(lambda s: s.get("chords") == ["ctrl+k", "ctrl+shift+k"])


async def test_drag_across_the_canvas(tool: ComputerUseTool, tk_app: TkApp) -> None:
    cx, cy = await locate(tool, BLUE)
    path = [[cx - 100, cy], [cx, cy + 40], [cx + 100, cy + 40]]
    result = await act(tool, action="drag", path=path)
    assert "dragged through 3 points" in result.content
    state = tk_app.wait_for(lambda s: s.get("released"))
    (px, py), (rx, ry) = state["drag"][0], state["released"]
    assert (rx - px, ry - py) == (200, 40), state  # canvas coordinates: the vector on screen
    # Moved in steps, not a jump: the app saw a point between the waypoints. (Tk compresses
    # queued motion events on a busy machine, so the number of points seen is not fixed.)
    waypoints = {(0, 0), (100, 40), (200, 40)}
    between = [(x - px, y - py) for x, y in state["drag"] if (x - px, y - py) not in waypoints]
    assert between, state


async def test_out_of_range_coordinates_refused_and_nothing_happens(
    tool: ComputerUseTool, tk_app: TkApp
) -> None:
    for kw in ({"x": 1280, "y": 10}, {"x": 5, "y": -1}):
        result = await tool.run(action="click", **kw)
        assert result.is_error and "outside the screenshot" in result.content
        assert "x must be 0..1279 and y 0..799" in result.content
    bad_drag = await tool.run(action="drag", path=[[0, 0], [2000, 5]])
    assert bad_drag.is_error and "outside the screenshot" in bad_drag.content
    assert tk_app.state.get("label") == "Press me"


async def test_bad_arguments_are_clear_errors(tool: ComputerUseTool, tk_app: TkApp) -> None:
    cases = [
        ({"action": "key", "keys": "ctrl+nosuchkey"}, "nosuchkey"),
        ({"action": "key", "keys": "ctrl+$"}, "type characters with action 'type'"),
        ({"action": "move"}, "needs x and y"),
        ({"action": "scroll", "x": 5, "y": 5}, "scroll needs dy"),
        ({"action": "scroll", "x": 5, "y": 5, "dy": 500}, "wheel notches, at most 30"),
        ({"action": "drag", "path": [[1, 1]]}, "2 to 32 points"),
        ({"action": "type", "text": ""}, "non-empty"),
    ]
    for kw, expected in cases:
        result = await tool.run(**kw)
        assert result.is_error and expected in result.content, (kw, result.content)


async def test_cursor_position_and_move(tool: ComputerUseTool, tk_app: TkApp) -> None:
    await act(tool, action="move", x=123, y=45)
    result = await act(tool, action="cursor_position")
    assert result.content.startswith("cursor at (123, 45)") and not result.attachments


async def test_no_display_is_a_clear_error(home: Path) -> None:
    raw = {"computer_use": {"enabled": True, "display": ":4999"}}
    async with tool_runtime(raw) as rt:
        (made,) = provide(rt)
        result = await made.run(action="screenshot")
    assert result.is_error and "cannot open X display :4999" in result.content


async def test_disabled_by_default(home: Path) -> None:
    async with tool_runtime() as rt:
        assert provide(rt) == []


async def test_consent_per_session_and_always_for_typing(home: Path) -> None:
    async with tool_runtime({"computer_use": {"enabled": True}}) as rt:
        (made,) = provide(rt)
    assert made.side_effect and made.interfaces == frozenset({"web", "lark"})
    assert made.consent_check(action="click", x=1, y=2)
    assert made.consent_scope(action="click") == "computer_use"
    assert not made.consent_always(action="screenshot")
    assert made.consent_always(action="type", text="rm -rf /") and made.consent_always(action="key")


def test_other_local_clients_are_refused_without_the_cookie(display: X11Display) -> None:
    env = {**display.env(), "XAUTHORITY": "/nonexistent"}
    probe = ["xdotool", "getmouselocation"]
    refused = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=10)
    assert refused.returncode != 0 and "Authorization required" in refused.stderr
    allowed = subprocess.run(probe, env=display.env(), capture_output=True, text=True, timeout=10)
    assert allowed.returncode == 0 and allowed.stdout.startswith("x:")
