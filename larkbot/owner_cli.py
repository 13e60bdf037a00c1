"""`larkbot owner list | add OPEN_ID | remove OPEN_ID`: hand the bot over without a restart."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys

from larkbot.config import Settings
from larkbot.lark.owners import Owners
from larkbot.logs import configure_logging
from larkbot.storage.db import Database

OPEN_ID = re.compile(r"^ou_[0-9A-Za-z_-]{1,120}$")
WHERE_FROM = {
    "config": "owner.open_ids / LARKBOT_OWNER_OPEN_IDS",
    "claim": "/claim",
    "cli": "cli",
    "setup": "larkbot setup",
}


def run_owner(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot owner`; returns the exit code."""
    if args.action in ("add", "remove") and not OPEN_ID.match(args.open_id or ""):
        print(
            f"larkbot owner {args.action}: give the person's open_id (ou_…); they can send "
            "/whoami to the bot to see it",
            file=sys.stderr,
        )
        return 2
    configure_logging("error")  # the pairing code is printed below, not logged
    return asyncio.run(_run(settings, args.action, args.open_id or ""))


async def _run(settings: Settings, action: str, open_id: str) -> int:
    db = Database(settings.storage.url)
    try:
        owners = Owners(db, settings.owner.open_ids, lark_connected=settings.lark.configured)
        await owners.init()
        return await _act(owners, action, open_id)
    finally:
        await db.close()


async def _act(owners: Owners, action: str, open_id: str) -> int:
    if action == "add":
        added = await owners.add(open_id)
        print(f"{open_id} is {'now' if added else 'already'} an owner.")
        return 0
    if action == "remove":
        if open_id in owners.configured:
            print(
                f"{open_id} is set in owner.open_ids / LARKBOT_OWNER_OPEN_IDS: remove it there "
                "and restart `larkbot serve`.",
                file=sys.stderr,
            )
            return 1
        if not await owners.remove(open_id):
            print(f"{open_id} is not an owner (see `larkbot owner list`).", file=sys.stderr)
            return 1
        print(f"{open_id} is no longer an owner.")
    entries = await owners.all()
    if not entries and not owners.lark_connected:  # no app yet: nobody could DM the bot
        print("No owner, and Lark is not connected: `larkbot setup` connects it and makes")
        print("whoever scans the owner; or run `larkbot owner add OPEN_ID`.")
        return 0
    if not entries:
        print("No owner: pairing is open. DM the bot:")
        print(f"  /claim {owners.pairing_code}")
        print("or run `larkbot owner add OPEN_ID`.")
        return 0
    if action == "list":
        for entry in entries:
            print(f"{entry.open_id}  ({WHERE_FROM.get(entry.source, entry.source)})")
    return 0
