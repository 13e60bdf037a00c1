"""What built-in tools are constructed with: shared clients, storage and live settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from larkbot.config import LiveSettings, Settings
from larkbot.storage.db import Database
from tools.attachments import FilePoster


@dataclass
class ToolRuntime:
    """Shared dependencies handed to every tool module's `provide(rt)`.

    `live.get()` returns the current settings (the `tools:` section hot-reloads);
    `services` holds optional subsystems by name ("scheduler", "knowledge", "browser")
    that tools look up at call time, so a tool works even when built before them;
    `posters` the channels that can post a file into a conversation now, by interface.
    """

    interface: str
    live: LiveSettings
    http: httpx.AsyncClient
    db: Database
    services: dict[str, Any] = field(default_factory=dict)
    posters: dict[str, FilePoster] = field(default_factory=dict)

    @property
    def settings(self) -> Settings:
        """The current settings."""
        return self.live.get()

    @property
    def home(self) -> Path:
        """`LARKBOT_HOME`."""
        return self.live.get().home
