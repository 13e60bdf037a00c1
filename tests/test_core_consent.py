"""ConsentStore grants and the ChannelGuard provider's rules."""

from __future__ import annotations

from larkbot.consent import (
    ChannelGuardProvider,
    ConsentRequest,
    ConsentStore,
    scope_covers,
)
from tests.core_helpers import DangerTool, EchoTool, WriteTool, ctx


def test_directory_grant_covers_subtree_not_siblings() -> None:
    store = ConsentStore()
    store.grant("s", "/a/b")
    assert store.is_granted("s", "/a/b")
    assert store.is_granted("s", "/a/b/c")
    assert store.is_granted("s", "/a/b/c/d/")
    assert not store.is_granted("s", "/a/other")
    assert not store.is_granted("s", "/a/bc")
    assert not store.is_granted("s", "/a")
    assert not store.is_granted("other-session", "/a/b/c")


def test_name_scopes_are_exact_and_clear_forgets() -> None:
    store = ConsentStore()
    store.grant("s", "shell")
    assert store.is_granted("s", "shell") and not store.is_granted("s", "shell2")
    store.clear_session_grants("s")
    assert not store.is_granted("s", "shell")


def test_root_grant_and_dot_segments() -> None:
    assert scope_covers("/", "/etc/passwd")
    assert not scope_covers("/a/b", "/a/b/../c")


def request(tool, owner: bool, always: bool = False) -> ConsentRequest:  # type: ignore[no-untyped-def]
    return ConsentRequest(tool, {}, "desc", tool.name, always, ctx(owner=owner))


async def test_channel_guard_rules() -> None:
    guard = ChannelGuardProvider()
    assert guard.screen(WriteTool(), ctx(owner=False)) is not None
    assert guard.screen(WriteTool(), ctx(owner=True)) is None
    assert guard.screen(EchoTool(), ctx(owner=False)) is None
    assert (await guard.decide(request(DangerTool(), owner=True, always=True))).allowed
    refused = await guard.decide(request(EchoTool(), owner=False))
    assert not refused.allowed and "owner" in refused.reason
