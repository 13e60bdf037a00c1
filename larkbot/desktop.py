"""The desktop behind `computer_use` in `larkbot serve`: its own Xvfb, and the doctor check."""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Any

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.config_sections import ComputerUseConfig
from larkbot.errors import ConfigError
from larkbot.logs import get_logger
from tools.desktop.xinput import DesktopError, X11Display
from tools.desktop.xvfb import Xvfb

log = get_logger("larkbot.desktop")

APT = "apt-get install xvfb xdotool xclip"


class DesktopServer:
    """A part of serve: an Xvfb when `computer_use.enabled` and `start_xvfb` are both true."""

    def __init__(self, config: ComputerUseConfig, services: dict[str, Any]) -> None:
        self.config = config
        self.services = services
        self.xvfb: Xvfb | None = None

    async def start(self) -> None:
        """Start Xvfb and publish its display as the `desktop` service the tool looks up."""
        if not (self.config.enabled and self.config.start_xvfb):
            return
        self.xvfb = Xvfb(self.config.size, self.config.display)
        try:
            display = await self.xvfb.start()
        except DesktopError as err:
            raise ConfigError(f"computer_use.start_xvfb: {err}") from None
        self.services["desktop"] = display
        log.info("xvfb_started", display=display.name, size=self.config.size, pid=self.xvfb.pid)

    async def stop(self) -> None:
        """Stop the Xvfb this server started (nothing otherwise)."""
        if self.xvfb is not None:
            await self.xvfb.stop()
            self.services.pop("desktop", None)
            log.info("xvfb_stopped")
            self.xvfb = None


def _missing(config: ComputerUseConfig) -> list[str]:
    needed = ["xdotool", "xclip", *(["Xvfb"] if config.start_xvfb else [])]
    return [b for b in needed if shutil.which(b) is None]


async def _probe(display: X11Display) -> str:
    from tools.desktop.screen import screen_geometry

    geometry = await asyncio.to_thread(screen_geometry, display)
    return geometry.describe()


async def check_desktop(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """computer_use: the binaries are installed and the display opens (a private Xvfb is tried)."""
    config = settings.computer_use
    if not config.enabled:
        return CheckResult("computer_use", True, "off (computer_use.enabled: false)")
    missing = _missing(config)
    if missing:
        return CheckResult(
            "computer_use", False, f"{', '.join(missing)} not on PATH", f"run: {APT}"
        )
    try:
        if config.start_xvfb:
            xvfb = Xvfb(config.size, config.display)
            try:
                shown = await _probe(await xvfb.start())
            finally:
                await xvfb.stop()
            return CheckResult("computer_use", True, f"serve will start Xvfb: {shown}")
        name = config.display or os.environ.get("DISPLAY", "")
        if not name:
            return CheckResult(
                "computer_use",
                False,
                "no display: computer_use.display is empty and $DISPLAY is unset",
                "set computer_use.display (e.g. ':99') or computer_use.start_xvfb: true",
            )
        return CheckResult(
            "computer_use", True, f"display {name}: {await _probe(X11Display(name))}"
        )
    except DesktopError as err:
        return CheckResult(
            "computer_use", False, str(err), f"check the X server is running, or {APT}"
        )
