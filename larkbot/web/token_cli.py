"""`larkbot web-token`: print a new web token; the old one and its login cookies stop working."""

from __future__ import annotations

import argparse
import asyncio
import sys

from larkbot.config import Settings
from larkbot.storage.db import Database
from larkbot.web.auth import WebAuth


async def _rotate(settings: Settings) -> str:
    db = Database(settings.storage.url)
    try:
        return await WebAuth(db).rotate()
    finally:
        await db.close()


def run_web_token(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot web-token`."""
    if settings.web.token.get_secret_value():
        print(
            "larkbot: the web token is set by web.token (or LARKBOT_WEB_TOKEN); "
            "change it there and restart serve",
            file=sys.stderr,
        )
        return 1
    token = asyncio.run(_rotate(settings))
    print(token)
    print("(the previous web token and its logins stop working within seconds)", file=sys.stderr)
    return 0
