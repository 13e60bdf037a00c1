"""`larkbot setup [--app-id ID] [--no-qr]`: create (or update) the Lark app with one scan."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from larkbot.config import Settings
from larkbot.lark.owners import Owners
from larkbot.logs import configure_logging
from larkbot.runtime_factory import new_http_client
from larkbot.scopes import Need
from larkbot.setup import qr
from larkbot.setup.flow import Outcome, Plan, complete, prepare
from larkbot.setup.registration import OnQr, SetupError, register
from larkbot.setup.steps import remaining_steps
from larkbot.storage.db import Database


def run_setup(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot setup`; returns the exit code."""
    configure_logging("error")
    return asyncio.run(_main(settings, args.app_id, show_qr=not args.no_qr))


def _say(text: str = "") -> None:
    print(text, flush=True)  # a test (or a person) acts on each line as it comes


def _counts(needs: list[Need]) -> str:
    kinds = [(k, sum(n.kind == k for n in needs)) for k in ("scope", "event", "callback")]
    return ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in kinds if n)


def _describe(plan: Plan) -> None:
    if plan.note:
        _say(plan.note)
    if plan.app_id is None:
        _say(f"Creating a new Lark app with {_counts(plan.ask)}.")
        return
    _say(f"Updating {plan.app_id}: adding {_counts(plan.ask)} it lacks:")
    for need in plan.ask:
        _say(f"  {need.kind} {need.name} ({need.token}) — {need.needed_for}")


def _on_qr(show_qr: bool) -> OnQr:
    def show(url: str, seconds: int) -> None:
        _say(f"Scan with the Lark / Feishu app within {max(seconds // 60, 1)} min, and confirm:")
        if show_qr:
            _say(qr.terminal(url))
        _say(f"or open this link on a device where you are signed in to Lark:\n{url}")
        _say("Waiting for the confirmation…")

    return show


def _on_status(info: dict[str, Any]) -> None:
    if info.get("status") == "slow_down":
        _say(f"(Lark asked to poll more slowly: every {info.get('interval')} s)")
    elif info.get("status") == "domain_switched":
        _say("(a Lark tenant: continuing on the Lark host)")


def _report(outcome: Outcome) -> None:
    reg = outcome.registered
    brand = "Lark" if reg.brand == "lark" else "Feishu"
    _say(f"✓ app {reg.app_id} ({brand}) saved to {outcome.saved_to} (mode 0600)")
    _say(f"✓ lark.domain {outcome.domain}, lark.mode {outcome.mode}")
    if outcome.owner in ("added", "already"):
        state = "is now" if outcome.owner == "added" else "was already"
        _say(f"✓ {reg.open_id} (who scanned) {state} an owner")
    elif outcome.owner == "kept":
        _say(f"  {reg.open_id} (who scanned) is no owner: `larkbot owner add` if they should be")
    if outcome.note:
        _say(f"! {outcome.note}")
    if outcome.missing and not outcome.published:
        _say("! not granted yet (some take effect only once a version is published):")
    elif outcome.missing:
        _say("! still missing (run `larkbot setup` again, or add them in the console):")
    for need in outcome.missing:
        _say(f"  {need.kind} {need.name} — without it {need.without}")
    _say("Left to do:")
    for i, step in enumerate(outcome.steps, 1):
        _say(f"  {i}. {step}")


async def _main(settings: Settings, app_id: str | None, *, show_qr: bool) -> int:
    async with new_http_client() as http:
        plan = await prepare(settings, http, app_id)
        if plan.app_id is not None and not plan.ask:
            _say(f"{plan.app_id} already has every scope, event and callback larkbot needs.")
            for i, step in enumerate(remaining_steps(settings, plan.app_id, plan.current), 1):
                _say(f"  {i}. {step}")
            return 0
        _describe(plan)
        try:
            reg = await register(
                settings.lark, plan.ask, _on_qr(show_qr), app_id=plan.app_id, on_status=_on_status
            )
        except SetupError as err:
            print(f"larkbot setup: {err}", file=sys.stderr)
            return 1
        db = Database(settings.storage.url)
        try:
            owners = Owners(db, settings.owner.open_ids)
            await owners.init()
            new = plan.app_id is None
            outcome = await complete(settings, http, reg, owners, new=new)
        finally:
            await db.close()
    _report(outcome)
    return 0
