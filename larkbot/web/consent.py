"""WebConsentProvider: the consent question goes into the turn's SSE stream, the click answers it.

As the design doc says: a `consent_request` event (AG-UI CUSTOM) is injected into the stream,
the page renders a card, and the turn awaits `POST /api/consent/{request_id}`. The answer may
land on any replica (`ConsentBoard`). `allow_session` is remembered for the session by scope
(paths cover subtrees, as in the CLI); `allow_once` is not; a `consent_always` call is asked
every time and never remembered; no answer before `expires_at` is a refusal.
"""

from __future__ import annotations

from datetime import UTC, datetime

from larkbot.consent import ConsentAnswer, ConsentRequest
from larkbot.web.consent_board import ConsentBoard
from larkbot.web.runs import RunRegistry


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


REASONS = {
    "deny": "the user declined",
    "expired": "the user did not answer in time",
    "cancelled": "the turn was stopped",
}


class WebConsentProvider:
    """Asks the web user through the stream of the run that made the call."""

    def __init__(self, board: ConsentBoard, runs: RunRegistry) -> None:
        self.board = board
        self.runs = runs

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        """Publish the policy's Ask into the run's stream and wait for the answer (or expiry)."""
        ctx = request.context
        run = self.runs.by_session(ctx.session_id)
        if run is None or run.custom is None or ctx.interface != "web" or not ctx.is_owner:
            return ConsentAnswer(False, "consent can only be asked of the web user in a turn")
        tool = request.tool.name
        req = await self.board.open(ctx.session_id, tool, request.scope, request.always)
        run.custom(
            "consent_request",
            {
                "request_id": req.request_id,
                "tool": request.tool.name,
                "description": request.description,
                "scope": request.scope,
                "always": request.always,
                "expires_at": _iso(req.expires_at),
                "tool_call_id": request.call_id,
                "sources": list(request.sources),  # untrusted text that raised the bar
            },
        )
        decision = await self.board.wait(req)
        run.custom("consent_resolved", {"request_id": req.request_id, "decision": decision})
        if decision == "allow_once":
            return ConsentAnswer(True, "allowed once by the user")
        if decision == "allow_session":
            # a consent_always call is never remembered, whatever the button said
            return ConsentAnswer(True, "allowed by the user", for_session=not request.always)
        return ConsentAnswer(False, REASONS.get(decision, "not allowed"))
