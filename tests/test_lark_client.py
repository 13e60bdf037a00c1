"""LarkClient against FakeLark: token single-flight, retries, re-token, bounds, every method."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.errors import CredentialsRefused, LarkAPIError
from larkbot.lark.api.transport import RetryPolicy
from tests.fakes.lark_server import TOKEN_ROUTE, FakeLark

FAST = RetryPolicy(attempts=4, backoff_base=0.01, backoff_max=0.05, ratelimit_wait_max=0.05)
REPLY = "POST /open-apis/im/v1/messages/{id}/reply"
SEND = "POST /open-apis/im/v1/messages"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def client(fake_lark: FakeLark, http: httpx.AsyncClient) -> LarkClient:
    return LarkClient(http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret, retry=FAST)


async def test_fifty_concurrent_sends_fetch_one_token(fake_lark: FakeLark, client: LarkClient):
    fake_lark.set_latency(0.05, "POST /open-apis/auth/v3/tenant_access_token/internal")
    ids = await asyncio.gather(*(client.send("oc_1", "text", {"text": str(i)}) for i in range(50)))
    assert fake_lark.token_fetches == 1
    assert len(set(ids)) == 50 and len(fake_lark.sent) == 50


async def test_429_twice_then_success_sends_once(fake_lark: FakeLark, client: LarkClient):
    fake_lark.add_message("om_user", chat_id="oc_9")
    fake_lark.fail_next(REPLY, status=429, times=2, headers={"x-ogw-ratelimit-reset": "1"})
    message_id = await client.reply("om_user", "text", {"text": "hi"}, uuid="r-om_user")
    assert [m["message_id"] for m in fake_lark.sent] == [message_id]
    assert fake_lark.sent[0]["chat_id"] == "oc_9"
    faults = [r.fault.code for r in fake_lark.requests if r.fault is not None]
    assert faults == [99991400, 99991400]


async def test_ratelimit_reset_header_is_honoured(fake_lark: FakeLark, http: httpx.AsyncClient):
    policy = RetryPolicy(backoff_base=0.01, ratelimit_wait_max=5.0)
    client = LarkClient(http, fake_lark.domain, "cli_test", "secret", retry=policy)
    await client.token()
    fake_lark.fail_next(SEND, status=429, headers={"x-ogw-ratelimit-reset": "0.3"})
    started = time.monotonic()
    await client.send("oc_1", "text", '{"text":"x"}')
    assert time.monotonic() - started >= 0.3


async def test_invalid_token_refetches_once(fake_lark: FakeLark, client: LarkClient):
    await client.send("oc_1", "text", {"text": "a"})
    fake_lark.revoke_tokens()
    await client.send("oc_1", "text", {"text": "b"})
    assert fake_lark.token_fetches == 2 and fake_lark.texts() == ["a", "b"]
    fake_lark.fail_next(SEND, status=400, code=99991663)
    await client.send("oc_1", "text", {"text": "c"})
    assert fake_lark.token_fetches == 3 and len(fake_lark.sent) == 3


async def test_token_rejected_twice_gives_up(fake_lark: FakeLark, client: LarkClient):
    fake_lark.fail_next(SEND, status=400, code=99991663, times=5)
    with pytest.raises(LarkAPIError) as info:
        await client.send("oc_1", "text", {"text": "a"})
    assert info.value.code == 99991663 and fake_lark.token_fetches == 2


async def test_5xx_is_retried(fake_lark: FakeLark, client: LarkClient):
    fake_lark.fail_next(SEND, status=503, times=2)
    await client.send("oc_1", "text", {"text": "a"})
    assert len(fake_lark.sent) == 1


async def test_persistent_failure_is_bounded(fake_lark: FakeLark, client: LarkClient):
    fake_lark.fail_next(SEND, status=500, code=1, times=100, msg="boom")
    with pytest.raises(LarkAPIError) as info:
        await client.send("oc_1", "text", {"text": "a"})
    assert (info.value.code, info.value.http_status, info.value.msg) == (1, 500, "boom")
    assert sum(r.route == SEND for r in fake_lark.requests) == FAST.attempts


async def test_non_retryable_code_raises_at_once(fake_lark: FakeLark, client: LarkClient):
    fake_lark.fail_next(SEND, status=400, code=230002, msg="Bot is not in the chat")
    with pytest.raises(LarkAPIError) as info:
        await client.send("oc_1", "text", {"text": "a"})
    assert info.value.code == 230002
    assert "add the bot to the group" in str(info.value)  # the operator's hint travels with it
    assert sum(r.route == SEND for r in fake_lark.requests) == 1


async def test_unreachable_and_slow_platform_are_bounded(fake_lark: FakeLark, http):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    client = LarkClient(http, dead, "cli_test", "secret", retry=FAST)
    with pytest.raises(LarkAPIError) as info:
        await client.token()
    assert (info.value.code, info.value.http_status) == (-1, 0)
    slow = RetryPolicy(attempts=2, backoff_base=0.01, timeout=0.1)
    client = LarkClient(http, fake_lark.domain, "cli_test", "secret", retry=slow)
    fake_lark.set_latency(60.0)
    started = time.monotonic()
    with pytest.raises(LarkAPIError):
        await client.bot_info()
    # two 0.1 s attempts, not the platform's 60 s: the margin holds on a loaded machine
    assert time.monotonic() - started < 30


async def test_bad_credentials_raise(fake_lark: FakeLark, http: httpx.AsyncClient):
    client = LarkClient(http, fake_lark.domain, "cli_test", "wrong", retry=FAST)
    with pytest.raises(LarkAPIError) as info:
        await client.bot_info()
    assert info.value.code == 99991543
    assert isinstance(info.value, CredentialsRefused) and "lark.app_secret" in info.value.hint


async def test_concurrent_callers_share_one_refused_token_fetch(fake_lark: FakeLark, http):
    client = LarkClient(http, fake_lark.domain, "cli_test", "wrong", retry=FAST)
    fake_lark.set_latency(0.05, TOKEN_ROUTE)  # the others queue on the lock meanwhile
    results = await asyncio.gather(*(client.token() for _ in range(10)), return_exceptions=True)
    assert all(isinstance(r, CredentialsRefused) for r in results)
    assert sum(r.route == TOKEN_ROUTE for r in fake_lark.requests) == 1
    fake_lark.app_secret = "wrong"  # fixed in the console: a call after the refusal fetches
    assert await client.token() and fake_lark.token_fetches == 1


async def test_token_expiry_is_respected(fake_lark: FakeLark, client: LarkClient):
    fake_lark.token_expire = 0
    await client.bot_info()
    await client.bot_info()
    assert fake_lark.token_fetches == 2


async def test_uuid_makes_sends_idempotent(fake_lark: FakeLark, client: LarkClient):
    first = await client.send("oc_1", "text", {"text": "a"}, uuid="u-1")
    again = await client.send("oc_1", "text", {"text": "a"}, uuid="u-1")
    assert first == again and len(fake_lark.sent) == 1 and fake_lark.dedup_hits == 1
    assert fake_lark.sent[0]["uuid"] == "u-1"
    await client.reply(first, "text", {"text": "r"}, uuid="u-2")
    await client.reply(first, "text", {"text": "r"}, uuid="u-2")
    assert len(fake_lark.sent) == 2 and fake_lark.sent[1]["uuid"] == "u-2"


async def test_message_methods(fake_lark: FakeLark, client: LarkClient):
    assert (await client.bot_info())["open_id"] == "ou_bot"
    card = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "**a**"}]}}
    sent = await client.send("ou_x", "interactive", card, receive_id_type="open_id")
    assert fake_lark.sent[0]["receive_id_type"] == "open_id" and fake_lark.sent[0]["body"] == card
    threaded = await client.reply(sent, "text", {"text": "t"}, reply_in_thread=True)
    assert fake_lark.sent[1]["reply_in_thread"] and fake_lark.sent[1]["thread_id"]
    assert (await client.get_message(threaded))["parent_id"] == sent
    header = {"title": {"tag": "plain_text", "content": "x"}}
    await client.patch(sent, {**card, "header": header})
    assert fake_lark.patches[0]["body"]["header"] == header
    assert (await client.add_reaction(sent, "THUMBSUP")).startswith("rc_")
    assert fake_lark.reactions[0]["emoji_type"] == "THUMBSUP"
    with pytest.raises(LarkAPIError):
        await client.patch(threaded, card)  # a text message cannot be patched
    assert len(await client.token()) > 2


async def test_cardkit_streaming_flow(fake_lark: FakeLark, client: LarkClient):
    card = {
        "schema": "2.0",
        "config": {"streaming_mode": True},
        "body": {"elements": [{"tag": "markdown", "element_id": "md", "content": "…"}]},
    }
    card_id = await client.create_card(card)
    sent = await client.send("oc_1", "interactive", {"type": "card", "data": {"card_id": card_id}})
    await client.stream_text(card_id, "md", "Hel", 1)
    await client.stream_text(card_id, "md", "Hello", 2)
    with pytest.raises(LarkAPIError) as info:
        await client.stream_text(card_id, "md", "Hello!", 2)
    assert info.value.code == 300317
    await client.update_card_settings(card_id, {"config": {"streaming_mode": False}}, 3)
    await client.update_card(card_id, {**card, "config": {"streaming_mode": False}}, 4)
    state = fake_lark.cardkit.cards[card_id]
    assert state.element_history["md"] == ["Hel", "Hello"]
    assert state.sequences == [1, 2, 3, 4] and not state.streaming_mode
    assert state.sent_message_id == sent


async def test_retry_after_ambiguous_failure_cannot_post_twice(fake_lark: FakeLark, http):
    # Lark accepted the first attempt but the answer was lost (a 5xx here): same uuid on retry.
    fake_lark.set_latency(0.3, SEND)
    slow = RetryPolicy(attempts=3, backoff_base=0.01, timeout=0.1, settle_seconds=0.0)
    client = LarkClient(http, fake_lark.domain, "cli_test", "secret", retry=slow)
    with pytest.raises(LarkAPIError):
        await client.send("oc_1", "text", {"text": "a"})
    await fake_lark.wait_for(lambda: sum(r.route == SEND for r in fake_lark.requests) == 3)
    await fake_lark.wait_for(lambda: fake_lark.dedup_hits == 2)
    assert len(fake_lark.sent) == 1 and len({r.json["uuid"] for r in fake_lark.requests[1:]}) == 1


async def test_long_uuids_are_hashed_stably(fake_lark: FakeLark, client: LarkClient):
    long = "reply-" + "x" * 80
    first = await client.send("oc_1", "text", {"text": "a"}, uuid=long)
    assert await client.send("oc_1", "text", {"text": "a"}, uuid=long) == first
    assert len(fake_lark.sent[0]["uuid"]) == 50
