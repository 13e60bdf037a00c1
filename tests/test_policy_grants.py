"""Session grants: names exact, paths cover subtrees, origins cover their URLs; per person."""

from __future__ import annotations

from larkbot.consent import NobodyToAsk
from larkbot.policy import ConsentStore, scope_covers
from tests.core_helpers import ScriptedConsent, WriteTool, ctx
from tools.browser.urls import origin_of  # browser_page's consent_scope, without the policy


def test_directory_grant_covers_subtree_not_siblings() -> None:
    store = ConsentStore()
    store.grant("s", "/a/b", "u")
    assert store.is_granted("s", "/a/b", "u")
    assert store.is_granted("s", "/a/b/c", "u")
    assert store.is_granted("s", "/a/b/c/d/", "u")
    assert not store.is_granted("s", "/a/other", "u")
    assert not store.is_granted("s", "/a/bc", "u")
    assert not store.is_granted("s", "/a", "u")
    assert not store.is_granted("other-session", "/a/b/c", "u")
    assert not store.is_granted("s", "/a/b/c", "someone-else")


def test_name_scopes_are_exact_and_clear_forgets() -> None:
    store = ConsentStore()
    store.grant("s", "shell", "u")
    assert store.is_granted("s", "shell", "u") and not store.is_granted("s", "shell2", "u")
    store.clear_session_grants("s")
    assert not store.is_granted("s", "shell", "u")


def test_root_grant_and_dot_segments() -> None:
    assert scope_covers("/", "/etc/passwd")
    assert not scope_covers("/a/b", "/a/b/../c")


def test_origin_scope_covers_its_urls_only() -> None:
    granted = origin_of("https://Example.com/login?next=/")
    assert granted == "https://example.com"
    assert scope_covers(granted, "https://example.com/a/b?c=d")
    assert scope_covers(granted, "https://example.com")
    assert not scope_covers(granted, "http://example.com/a")  # another scheme
    assert not scope_covers(granted, "https://example.com.evil.net/")
    assert not scope_covers(granted, "https://example.com:8443/")
    assert not scope_covers(granted, "/example.com")
    # a grant of a full URL is not an origin grant: it covers only itself
    assert not scope_covers("https://example.com/a", "https://example.com/b")


def test_the_browser_declares_origin_scopes_the_policy_reads_as_origins() -> None:
    for url in ("https://Example.com:8443/a?b=c", "http://x.test", "about:blank", "http://[::1"):
        # what the browser declares, the policy reads as covering that URL and no other origin
        assert scope_covers(origin_of(url), url)
        assert not scope_covers(origin_of(url), "https://other.test/")
    assert scope_covers(origin_of("https://Shop.example/cart"), "https://shop.example/pay")


async def test_nobody_to_ask_says_no_and_scripted_consent_records() -> None:
    from larkbot.consent import ConsentRequest

    request = ConsentRequest(WriteTool(), {}, "write /x", "/", False, ctx())
    assert not (await NobodyToAsk().present(request)).allowed
    scripted = ScriptedConsent(answers=[True])
    assert (await scripted.present(request)).for_session
