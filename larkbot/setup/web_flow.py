"""The one-scan registration run from the web page: one at a time per process, its QR code as SVG.

`serve` hands it to the web channel (which sees only the `SetupFlow` protocol of
`web/setup_api.py`). On success the app is saved as `larkbot setup` saves it and its creator
becomes an owner; this process keeps its settings, so the answer says to restart `larkbot serve`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from larkbot.logs import get_logger
from larkbot.misconfig import Problem, llm_key
from larkbot.setup import qr
from larkbot.setup.flow import Outcome, complete, prepare
from larkbot.setup.registration import SetupError, register
from larkbot.setup.steps import remaining_steps

if TYPE_CHECKING:
    from larkbot.app import App

log = get_logger("larkbot.setup.web")
QR_WAIT_SECONDS = 30.0  # init + begin at the registration host, then the QR code is known


class WebSetup:
    """One registration at a time for this process, and what the page is told about it."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.state = "idle"  # idle | waiting | done | failed
        self.url = ""
        self.svg = ""
        self.expires_at = 0.0
        self.result: dict[str, Any] | None = None
        self.error = ""
        self._task: asyncio.Task[None] | None = None
        self._shown = asyncio.Event()

    def status(self) -> dict[str, Any]:
        """The JSON of `GET /api/setup/status`."""
        return {
            # this process's settings (a restart picks up a new app)
            "configured": self.app.settings.lark.configured,
            "state": self.state,
            "url": self.url,
            "svg": self.svg,
            "expires_at": self.expires_at,
            "result": self.result,
            "error": self.error,
            # the page warns before the first message, in serve's own words (misconfig.llm_key)
            "llm": _problem(llm_key(self.app.settings)),
        }

    async def start(self) -> None:
        """Begin a registration (unless one is waiting) and wait until its QR code is known."""
        if self._task is not None and not self._task.done():
            return
        self.state, self.url, self.svg, self.result, self.error = "waiting", "", "", None, ""
        self._shown.clear()
        self._task = asyncio.create_task(self._run(self.app))
        waiter = asyncio.create_task(self._shown.wait())
        both = {waiter, self._task}
        await asyncio.wait(both, timeout=QR_WAIT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()

    def _show(self, url: str, seconds: int) -> None:
        self.url, self.svg = url, qr.svg(url)
        self.expires_at = time.time() + seconds
        self._shown.set()

    async def _run(self, app: App) -> None:
        settings, http = app.settings, app.core.http
        try:
            plan = await prepare(settings, http, None)
            if plan.app_id is not None and not plan.ask:
                steps = remaining_steps(settings, plan.app_id, plan.current)
                self.state, self.result = "done", {"app_id": plan.app_id, "steps": steps}
                return
            reg = await register(settings.lark, plan.ask, self._show, app_id=plan.app_id)
            outcome = await complete(settings, http, reg, app.owners, new=plan.app_id is None)
            self.result = _describe(outcome)
            self.state = "done"
        except asyncio.CancelledError:
            raise
        except SetupError as err:
            self.state, self.error = "failed", str(err)
        except Exception as err:  # a bug or an unusable store: say it, keep serving
            log.exception("web_setup_failed")
            self.state, self.error = "failed", f"{type(err).__name__}: {err}"[:300]

    async def close(self) -> None:
        """Stop a registration still waiting for its scan."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _problem(problem: Problem | None) -> dict[str, str] | None:
    """A set-up mistake as the page shows it: key, problem and fix (None when there is none)."""
    if problem is None:
        return None
    return {"key": problem.key, "problem": problem.problem, "fix": problem.fix}


def _describe(outcome: Outcome) -> dict[str, Any]:
    reg = outcome.registered
    return {
        "app_id": reg.app_id,
        "brand": reg.brand,
        "domain": outcome.domain,
        "mode": outcome.mode,
        "owner": reg.open_id if outcome.owner in ("added", "already") else "",
        "missing": [f"{n.kind} {n.name}: without it {n.without}" for n in outcome.missing],
        "note": outcome.note,
        "steps": ["Restart `larkbot serve` to connect with the new app.", *outcome.steps],
    }
