"""Approvals whose turn is cancelled while the card waits for a click."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from larkbot.consent import ConsentRequest
from larkbot.context import RequestContext
from larkbot.lark.api.client import LarkClient
from larkbot.lark.approvals.approval import LarkApprovals
from larkbot.lark.approvals.approval_store import ApprovalStore
from larkbot.storage.db import Database
from larkbot.storage.signals import LocalSignal
from tests.fakes.lark_server import FakeLark
from tests.test_cards_approval_e2e import approval_id_of
from tools.base import BaseTool


class _Dangerous(BaseTool):
    name = "danger"
    description = "does something dangerous"

    async def run(self, **kwargs: Any) -> str:
        return "done"


class _CardShown(LarkClient):
    """The real client, telling the test when the approval card has been sent."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.shown = asyncio.Event()

    async def reply(self, *args: Any, **kwargs: Any) -> str:
        message_id = await super().reply(*args, **kwargs)
        self.shown.set()
        return message_id


async def _owner(open_id: str) -> bool:
    return open_id == "ou_owner"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ApprovalStore]:
    """The approval table on a fresh SQLite file, one process (no signal)."""
    db = Database(f"sqlite:///{tmp_path}/approvals.db")
    approval_store = ApprovalStore(db, LocalSignal())
    await approval_store.init()
    yield approval_store
    await approval_store.close()
    await db.close()


def _click(approval_id: str) -> dict[str, Any]:
    return {
        "event": {
            "operator": {"open_id": "ou_owner"},
            "action": {"value": {"approval": approval_id, "decision": "approve"}},
        }
    }


async def test_approval_of_a_cancelled_turn_expires_and_ignores_late_clicks(
    store: ApprovalStore,
) -> None:
    """Regression: a cancelled turn left its approval pending forever (never evicted, clickable)."""
    async with FakeLark() as fake, httpx.AsyncClient() as http:
        fake.add_message("om_1", "oc_dm")
        client = _CardShown(http, fake.domain, fake.app_id, fake.app_secret)
        approvals = LarkApprovals(client, store, _owner, lambda: 30.0)
        ctx = RequestContext("lark", "s1", "ou_owner", True, message_id="om_1")
        request = ConsentRequest(_Dangerous(), {}, "do it", "danger", True, ctx)
        task = asyncio.create_task(approvals.present(request))
        await asyncio.wait_for(client.shown.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        approval_id = approval_id_of(fake.sent[0]["body"])
        row = await store.get(approval_id)
        assert row is not None and row.state == "expired"
        answer = await approvals.handle_card(_click(approval_id))
        assert "expired" in answer["toast"]["content"]
        row = await store.get(approval_id)
        assert row is not None and row.state == "expired"


class _ClickedInFlight(LarkClient):
    """The owner clicks while the send of the card has not returned yet (a busy bot)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.approvals: LarkApprovals | None = None
        self.answer: dict[str, Any] = {}

    async def reply(self, *args: Any, **kwargs: Any) -> str:
        message_id = await super().reply(*args, **kwargs)
        assert self.approvals is not None
        card = args[2]  # reply(message_id, msg_type, content, …)
        self.answer = await self.approvals.handle_card(_click(approval_id_of(card)))
        return message_id


async def test_a_click_before_the_send_returns_counts(store: ApprovalStore) -> None:
    """Regression: the approval was registered only after the send returned, so an early click
    was answered 'expired' and the turn waited for a click that had already come."""
    async with FakeLark() as fake, httpx.AsyncClient() as http:
        fake.add_message("om_1", "oc_dm")
        client = _ClickedInFlight(http, fake.domain, fake.app_id, fake.app_secret)
        approvals = client.approvals = LarkApprovals(client, store, _owner, lambda: 30.0)
        ctx = RequestContext("lark", "s1", "ou_owner", True, message_id="om_1")
        request = ConsentRequest(_Dangerous(), {}, "do it", "danger", True, ctx)
        answer = await asyncio.wait_for(approvals.present(request), 30)
        assert answer.allowed and "Approved" in client.answer["toast"]["content"]
