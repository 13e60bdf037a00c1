"""What a scan asks for, and what happens with its answer (shared by `larkbot setup` and the web).

`prepare` reads the existing app (if any) and keeps only what it lacks; `complete` saves the
credentials to `$LARKBOT_HOME/.secrets/lark.env` (0600), makes the person who created the app
an owner (on a re-scan only while the bot has none: scanning grants no powers by itself),
reads the app back and lists what the registration could not do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from larkbot.config import Settings, load_settings
from larkbot.config_env import SAVED_ENV
from larkbot.lark.api.app_info import AppInfo, fetch_app_info
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.transport import RetryPolicy
from larkbot.lark.owners import Owners
from larkbot.scopes import Need, enabled
from larkbot.setup.registration import Registered
from larkbot.setup.steps import remaining_steps


@dataclass(frozen=True)
class Plan:
    """The scan to show: which app (None: a new one), what to ask for, the app as it is."""

    app_id: str | None
    ask: list[Need]
    current: AppInfo | None = None
    note: str = ""  # why everything is asked for although the app exists


@dataclass(frozen=True)
class Outcome:
    """A completed scan: where things were saved, who owns the bot, what is left to do."""

    registered: Registered
    saved_to: Path
    domain: str
    mode: str
    owner: str  # added | already | kept (a re-scan while the bot has owners) | unknown
    published: bool = False  # an online version exists (else grants may still be pending)
    missing: list[Need] = field(default_factory=list)  # still not granted after the scan
    steps: list[str] = field(default_factory=list)
    note: str = ""


def _client(http: httpx.AsyncClient, settings: Settings) -> LarkClient:
    return LarkClient.from_config(http, settings.lark, retry=RetryPolicy(attempts=2, timeout=10.0))


async def prepare(settings: Settings, http: httpx.AsyncClient, app_id: str | None) -> Plan:
    """A new app asks for every enabled entry; an existing one only for what it lacks."""
    needs = enabled(settings)
    target = app_id or settings.lark.app_id or None
    if target is None:
        return Plan(None, needs)
    if not settings.lark.configured or settings.lark.app_id != target:
        return Plan(target, needs, note=f"no saved secret for {target}: asking for everything")
    try:
        current = await fetch_app_info(_client(http, settings), target)
    except LarkAPIError as err:
        return Plan(target, needs, note=f"cannot read the app's scopes ({err}): asking for all")
    return Plan(target, current.missing(needs), current)


def save_credentials(settings: Settings, reg: Registered) -> Path:
    """Write the app's variables to `$LARKBOT_HOME/.secrets/lark.env`, readable by us alone."""
    lines = {
        "LARK_APP_ID": reg.app_id,
        "LARK_APP_SECRET": reg.app_secret,
        "LARK_DOMAIN": reg.official_domain,
    }
    lark = settings.lark
    authenticated = (
        lark.verification_token.get_secret_value() or lark.encrypt_key.get_secret_value()
    )
    if lark.mode == "webhook" and not authenticated:
        lines["LARK_MODE"] = "websocket"  # webhook without a token refuses every event
    path = settings.home / SAVED_ENV
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("# written by `larkbot setup`; an exported variable wins over a line here\n")
        out.writelines(f"{name}={value}\n" for name, value in lines.items())
    os.replace(tmp, path)  # never a half-written file, never a moment with wider permissions
    return path


async def _first_owner(owners: Owners, open_id: str, new: bool) -> str:
    if not open_id:
        return "unknown"
    if not new and await owners.has_owner():
        return "kept"  # whoever confirms a re-scan is no owner for it
    return "added" if await owners.add(open_id, source="setup") else "already"


async def complete(
    settings: Settings, http: httpx.AsyncClient, reg: Registered, owners: Owners, *, new: bool
) -> Outcome:
    """Save, make the app's creator an owner, read the app back (with the saved settings)."""
    saved_to = save_credentials(settings, reg)
    owner = await _first_owner(owners, reg.open_id, new)
    fresh = load_settings(settings.source)  # what `serve` will run with from now on
    note = ""
    if fresh.lark.app_id != reg.app_id:
        note = (
            f"lark.app_id is {fresh.lark.app_id!r} in your config or environment, which wins "
            f"over the saved {reg.app_id}: remove it (LARK_APP_ID / lark.app_id) to use this app"
        )
    needs = enabled(fresh)
    current: AppInfo | None = None
    try:
        client = LarkClient(http, fresh.lark.domain, reg.app_id, reg.app_secret)
        current = await fetch_app_info(client, reg.app_id)
    except LarkAPIError as err:
        note = note or f"cannot read the app back ({err})"
    missing = current.missing(needs) if current is not None else []
    return Outcome(
        registered=reg,
        saved_to=saved_to,
        domain=fresh.lark.domain,
        mode=fresh.lark.mode,
        owner=owner,
        published=current is not None and current.published,
        missing=missing,
        steps=remaining_steps(fresh, reg.app_id, current),
        note=note,
    )
