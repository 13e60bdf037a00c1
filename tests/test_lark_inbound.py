"""Inbound normalisation: text, post, media, mentions, threads, bots; the documented shapes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from larkbot.lark.arrival.inbound import InboundMessage, normalize

BOT = "ou_bot"


def envelope(
    content: dict[str, Any] | str,
    *,
    message_type: str = "text",
    mentions: list[dict[str, Any]] | None = None,
    chat_type: str = "group",
    sender_type: str = "user",
    sender: str = "ou_alice",
    **message: Any,
) -> dict[str, Any]:
    """A schema-2.0 im.message.receive_v1 envelope shaped like the doc's example."""
    body = {
        "message_id": "om_1",
        "chat_id": "oc_1",
        "chat_type": chat_type,
        "message_type": message_type,
        "create_time": "1609073151345",
        "content": content if isinstance(content, str) else json.dumps(content),
        **message,
    }
    if mentions is not None:
        body["mentions"] = mentions
    return {
        "schema": "2.0",
        "header": {"event_id": "ev_1", "event_type": "im.message.receive_v1"},
        "event": {
            "sender": {"sender_id": {"open_id": sender}, "sender_type": sender_type},
            "message": body,
        },
    }


def mention(n: int, open_id: str, name: str) -> dict[str, Any]:
    """One `mentions[]` entry."""
    return {"key": f"@_user_{n}", "id": {"open_id": open_id}, "name": name}


def test_text_dm() -> None:
    msg = normalize(envelope({"text": "hello"}, chat_type="p2p"), BOT)
    assert msg is not None
    assert (msg.text, msg.is_dm, msg.message_id, msg.sender_open_id) == (
        "hello",
        True,
        "om_1",
        "ou_alice",
    )
    assert msg.event_id == "ev_1" and msg.create_time == "1609073151345"


def test_bot_mention_removed_and_others_named() -> None:
    ms = [mention(1, BOT, "Larkbot"), mention(2, "ou_tom", "Tom")]
    msg = normalize(envelope({"text": "@_user_1 ask @_user_2 about it"}, mentions=ms), BOT)
    assert msg is not None
    assert msg.text == "ask @Tom about it"
    assert msg.mentions_bot and not msg.mentioned_all and msg.mentions == ("Tom",)


def test_mention_of_someone_else_is_not_the_bot() -> None:
    msg = normalize(envelope({"text": "@_user_1 hi"}, mentions=[mention(1, "ou_tom", "Tom")]), BOT)
    assert msg is not None and not msg.mentions_bot and msg.text == "@Tom hi"


def test_at_all_detected_with_or_without_mentions_entry() -> None:
    a = normalize(envelope({"text": "@_all standup"}), BOT)
    b = normalize(
        envelope({"text": "@_all x"}, mentions=[{"key": "@_all", "id": {"user_id": "all"}}]), BOT
    )
    assert a is not None and a.mentioned_all and a.text == "@all standup" and not a.mentions_bot
    assert b is not None and b.mentioned_all


def test_post_becomes_markdown() -> None:
    post = {
        "title": "Plan",
        "content": [
            [
                {"tag": "at", "user_id": "@_user_1"},
                {"tag": "text", "text": " look", "style": ["bold"]},
            ],
            [{"tag": "a", "href": "https://x.test", "text": "link"}],
            [{"tag": "code_block", "language": "PYTHON", "text": "def f():\n    return 1"}],
            [{"tag": "img", "image_key": "img_1"}],
        ],
    }
    msg = normalize(envelope(post, message_type="post", mentions=[mention(1, BOT, "B")]), BOT)
    assert msg is not None and msg.mentions_bot
    assert msg.text.startswith("# Plan\n\n**look**")
    assert "[link](https://x.test)" in msg.text
    assert "```python\ndef f():\n    return 1\n```" in msg.text  # indentation survives
    assert "img_1" in msg.text


def test_media_types_are_described() -> None:
    cases = {
        "image": ({"image_key": "img_x"}, "image"),
        "file": ({"file_key": "f", "file_name": "report.pdf"}, "report.pdf"),
        "audio": ({"file_key": "f", "duration": 3000}, "voice message (3 s)"),
        "media": ({"file_key": "f", "file_name": "clip.mp4", "duration": 1000}, "clip.mp4"),
        "sticker": ({"file_key": "f"}, "sticker"),
        "merge_forward": ({"content": "Merged and Forwarded Message"}, "forwarded"),
        "share_chat": ({"chat_id": "oc_9"}, "oc_9"),
        "interactive": (
            {"title": "Card T", "elements": [[{"tag": "text", "text": "body"}]]},
            "body",
        ),
        "vote": ({"topic": "lunch?"}, "lunch?"),
    }
    for mtype, (content, expected) in cases.items():
        msg = normalize(envelope(content, message_type=mtype), BOT)
        assert msg is not None and expected in msg.text, (mtype, msg)


def test_replies_and_threads() -> None:
    msg = normalize(
        envelope({"text": "x"}, root_id="om_r", parent_id="om_p", thread_id="omt_1"), BOT
    )
    assert msg is not None
    assert (msg.root_id, msg.parent_id, msg.thread_id) == ("om_r", "om_p", "omt_1")


def test_bots_and_self_are_ignored() -> None:
    assert normalize(envelope({"text": "x"}, sender_type="app"), BOT) is None
    assert normalize(envelope({"text": "x"}, sender_type="bot"), BOT) is None
    assert normalize(envelope({"text": "x"}, sender=BOT), BOT) is None


def test_malformed_and_other_events() -> None:
    assert normalize(None, BOT) is None
    assert normalize({"header": {"event_type": "im.chat.member.bot.added_v1"}}, BOT) is None
    broken = envelope("not json", message_type="text")
    msg = normalize(broken, BOT)
    assert msg is not None and msg.text == ""
    missing = envelope({"text": "x"})
    del missing["event"]["message"]["chat_id"]
    assert normalize(missing, BOT) is None
    assert normalize({"header": {"event_type": "im.message.receive_v1"}, "event": []}, BOT) is None


def test_json_round_trip() -> None:
    msg = normalize(envelope({"text": "hi @_user_1"}, mentions=[mention(1, "ou_t", "T")]), BOT)
    assert msg is not None
    assert InboundMessage.from_json(msg.to_json()) == msg


def test_journal_copy_holds_every_field_and_nothing_else() -> None:
    # to_json encodes the instance's __dict__ as it is: however the message was made
    msg = normalize(envelope({"text": "hi"}), BOT)
    assert msg is not None
    made = InboundMessage("om_1", "oc_1", "p2p", "ou_1", "hi")
    fields = {f.name for f in dataclasses.fields(InboundMessage)}
    for each in (msg, dataclasses.replace(msg, signed=False), made):
        assert json.loads(each.to_json()).keys() == fields
        assert InboundMessage.from_json(each.to_json()) == each


def test_regression_post_with_non_list_content() -> None:
    """Found by the hostile-body test: `{"content": 1}` in a post crashed the normaliser."""
    for content in (
        {"content": 1},
        {"content": [1, [None, {"tag": 3}]]},
        {"zh_cn": {"content": "x"}},
    ):
        msg = normalize(envelope(content, message_type="post"), BOT)
        assert msg is not None and isinstance(msg.text, str)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_types = st.sampled_from(["text", "post", "image", "file", "audio", "media", "interactive", "x"])


@settings(max_examples=120, deadline=None)
@given(content=_json, mentions=_json, message_type=_types, extra=_json)
def test_normalize_never_raises(content: Any, mentions: Any, message_type: str, extra: Any) -> None:
    """Whatever a sender puts in content/mentions, normalise returns a message or None."""
    env = envelope(json.dumps(content), message_type=message_type)
    env["event"]["message"]["mentions"] = mentions
    env["event"]["message"]["extra"] = extra
    msg = normalize(env, BOT)
    assert msg is None or isinstance(msg.text, str)
    post = envelope({"content": content, "title": extra}, message_type="post")
    assert normalize(post, BOT) is not None


def test_at_all_in_a_post_is_detected() -> None:
    # Regression: a post's `at` element for everyone became "@all" before detection, so with no
    # `mentions` entry an @all post was never seen as one (answer_at_all did nothing for posts).
    post = {"content": [[{"tag": "at", "user_id": "all"}, {"tag": "text", "text": " standup"}]]}
    msg = normalize(envelope(post, message_type="post"), BOT)
    assert msg is not None and msg.mentioned_all and msg.text == "@all standup"


def test_a_normalized_message_is_a_whole_frozen_inbound_message() -> None:
    import dataclasses

    import pytest

    msg = normalize(envelope({"text": "@_user_1 hello @_all"}, mentions=[]), BOT)
    assert msg is not None
    fields = {f.name: getattr(msg, f.name) for f in dataclasses.fields(msg)}
    assert msg == InboundMessage(**fields) and msg.signed and msg.mentioned_all
    assert dataclasses.replace(msg, signed=False).signed is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.text = "changed"  # type: ignore[misc]
    assert InboundMessage.from_json(msg.to_json()) == msg
