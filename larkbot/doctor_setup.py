"""`larkbot doctor`'s set-up lines: each mistake `serve` warns about fails doctor, with its fix."""

from __future__ import annotations

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.lark.owners import Owners, owners_table
from larkbot.misconfig import find_problems
from larkbot.storage.db import Database


async def _has_owner(settings: Settings) -> bool:
    if settings.owner.open_ids:
        return True
    db = Database(settings.storage.url)
    try:
        await db.create(owners_table)  # read-only otherwise: doctor never opens pairing
        return await Owners(db, []).has_owner()
    finally:
        await db.close()


async def check_setup(settings: Settings, http: httpx.AsyncClient) -> list[CheckResult]:
    """Webhook authentication, an owner, unset `${VAR}`s (credentials and keys: other lines)."""
    try:
        has_owner: bool | None = await _has_owner(settings)
    except Exception:
        has_owner = None  # the storage line already says why the database is unusable
    covered = ("lark_credentials", "llm_key")  # the lark and llm lines say these
    problems = [p for p in find_problems(settings, has_owner) if p.key not in covered]
    lines = [CheckResult(p.key, False, p.problem, p.fix) for p in problems]
    if has_owner is None and settings.lark.configured:  # never ✓ for what was not looked at
        unknown = "not checked: storage unusable (see storage)"
        lines.append(CheckResult("owner", True, unknown, skipped=True))
    if lines:
        return lines
    if not settings.lark.configured:  # owner and event checks wait for an app (see lark)
        return [
            CheckResult("setup", True, "no unset ${VAR}; owner and events once Lark is connected")
        ]
    return [CheckResult("setup", True, "events authenticated, owner set, no unset ${VAR}")]
