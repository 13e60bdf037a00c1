"""Approvals during the soak: an owner's `rm -rf` in a group waits for its card, the click is
sent to a different replica than the one that asked, and the turn must finish there."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from bench.soak_rig import PIN, Proxy
from tests.lark_harness import bot_mention, message_event, seal
from tests.test_cards_approval_e2e import approval_id_of, click

if TYPE_CHECKING:
    from bench.soak_run import Sender, Soak

WAIT = 90.0  # bound on each step (card shown, answer after the click)


@dataclass
class ApprovalBooks:
    """What the approval rounds saw."""

    resolved: list[float] = field(default_factory=list)  # message sent → answer, seconds
    cross_replica: int = 0  # clicks that went to another replica than the asker
    problems: list[str] = field(default_factory=list)


def victim(root: Path, k: int) -> Path:
    """The directory approval `k` deletes once approved."""
    return root / "victims" / f"a{k}"


def _card_for(soak: Soak, mid: str, chat_id: str) -> dict[str, Any] | None:
    """The approval card of message `mid`: a reply in a DM, in a group the ephemeral card only
    the owner sees (or, where ephemeral cards fail, a DM)."""
    for e in soak.lark.ephemerals:
        if e["chat_id"] == chat_id and "Approval" in json.dumps(e["card"].get("header", {})):
            return dict(e["card"])
    for m in soak.lark.sent:
        header = json.dumps(m["body"].get("header", {})) if m["msg_type"] == "interactive" else ""
        if m["reply_to"] == mid and "Approval" in header:
            return dict(m["body"])
    return None


def _answered(soak: Soak, token: str) -> bool:
    return any(
        m["msg_type"] == "text" and f"answer to {token}" in m["body"].get("text", "")
        for m in soak.lark.sent
    )


async def approvals(soak: Soak, sender: Sender, proxy: Proxy, count: int) -> ApprovalBooks:
    """Run `count` approval round trips at once; every one must end answered."""
    books = ApprovalBooks()
    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(_one(soak, sender, proxy, http, k, books) for k in range(count)))
    return books


async def _one(
    soak: Soak, sender: Sender, proxy: Proxy, http: aiohttp.ClientSession, k: int, books: Any
) -> None:
    token, mid, chat = f"a{k}", f"om_soak_a{k}", f"oc_soak_group_{k}"
    target = victim(soak.root, k)
    target.mkdir(parents=True, exist_ok=True)
    (target / "data.txt").write_text("delete me")
    env = message_event(
        f"@_user_1 soak-{token}: clean up", chat_id=chat, chat_type="group",
        message_id=mid, mentions=[bot_mention()],
    )  # fmt: skip
    started = time.monotonic()
    await sender.deliver(env)
    try:
        await soak.lark.wait_for(lambda: _card_for(soak, mid, chat) is not None, timeout=WAIT)
    except TimeoutError:
        books.problems.append(f"{token}: no approval card")
        return
    card = _card_for(soak, mid, chat)
    assert card is not None
    asker = next((i for i, asked in enumerate(soak.asked) if any(t == token for t, _ in asked)))
    other = (asker + 1) % len(soak.replicas)
    answer = await _click(http, proxy, approval_id_of(card), other)
    if answer.get("toast", {}).get("type") != "success":
        books.problems.append(f"{token}: the click on replica {other} answered {answer}")
        return
    books.cross_replica += 1
    try:
        await soak.lark.wait_for(lambda: _answered(soak, token), timeout=WAIT)
    except TimeoutError:
        books.problems.append(f"{token}: approved on replica {other}, never answered")
        return
    books.resolved.append(time.monotonic() - started)
    if target.exists():
        books.problems.append(f"{token}: approved, answered, but {target} still exists")


async def _click(
    http: aiohttp.ClientSession, proxy: Proxy, approval: str, replica: int
) -> dict[str, Any]:
    """The owner's Approve, sent to `replica` (redelivered like Lark until a 200)."""
    envelope = click(approval, "approve")
    deadline = time.monotonic() + WAIT
    while True:
        body, headers = seal(envelope)
        headers[PIN] = str(replica)
        try:
            async with http.post(f"{proxy.url}/lark/card", data=body, headers=headers) as r:
                if r.status == 200:
                    return dict(await r.json(content_type=None))
        except (aiohttp.ClientError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            return {"error": "never acknowledged"}
        await asyncio.sleep(0.5)  # Lark's retry
