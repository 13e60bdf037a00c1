"""Fixtures of the desktop tests: a private Xvfb per module, a fresh Tk window per test."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.desktop.harness import TkApp
from tools.desktop.xinput import X11Display
from tools.desktop.xvfb import Xvfb


@pytest.fixture(scope="module")
def xvfb() -> Iterator[Xvfb]:
    """An Xvfb on a display number of its own (the server picks a free one), stopped after."""
    server = Xvfb("1280x800")
    asyncio.run(server.start())  # bounded: start() waits at most 10 s for the server's answer
    try:
        yield server
    finally:
        asyncio.run(server.stop())


@pytest.fixture
def display(xvfb: Xvfb) -> X11Display:
    """The module's display."""
    assert xvfb.display is not None
    return xvfb.display


@pytest.fixture
def tk_app(display: X11Display) -> Iterator[TkApp]:
    """The Tk test window, mapped and drawn, closed after the test."""
    app = TkApp(display)
    try:
        yield app
    finally:
        app.close()
