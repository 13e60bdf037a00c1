"""A ToolRuntime for built-in tool tests: settings from a dict, a real httpx client and Database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from larkbot.config import LiveSettings, parse_settings
from larkbot.storage.db import Database
from tools.runtime import ToolRuntime


@asynccontextmanager
async def tool_runtime(raw: dict[str, Any] | None = None) -> AsyncIterator[ToolRuntime]:
    """Build settings (LARKBOT_HOME must already point at a tmp dir) and the runtime around them."""
    settings = parse_settings(raw or {})
    db = Database(settings.storage.url)
    async with httpx.AsyncClient(verify=False) as http:  # no HTTPS here: skip loading CA certs
        try:
            yield ToolRuntime("cli", LiveSettings(settings), http, db)
        finally:
            await db.close()
