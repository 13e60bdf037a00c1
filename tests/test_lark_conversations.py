"""Lark conversations as people have them, end to end over signed webhooks and FakeLark/FakeLLM:
who said what, images and files in, quotes, merge-forwards, and their bad inputs."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import docx
from PIL import Image

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, bot_mention, message_event, settings_for

GROUP = {"chat_id": "oc_team", "chat_type": "group"}


def user_messages(request: dict[str, Any]) -> list[Any]:
    """The `content` of every user message the model saw, oldest first."""
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p["type"] == "text")


def images_of(content: Any) -> list[Image.Image]:
    """The image parts of a content, decoded."""
    if isinstance(content, str):
        return []
    out = []
    for part in content:
        if part["type"] == "image_url":
            url = part["image_url"]["url"]
            assert url.startswith("data:image/")
            out.append(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    return out


def jpeg(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (20, 160, 90)).save(buf, "JPEG")
    return buf.getvalue()


def pdf_with_text(text: str) -> bytes:
    """A minimal one-page PDF whose page shows `text` (Helvetica)."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for i, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def docx_with(paragraphs: list[str]) -> bytes:
    document = docx.Document()
    for p in paragraphs:
        document.add_paragraph(p)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "owner", "Dana"
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


async def send(s: Served, fake_lark: FakeLark, event: dict[str, Any], replies: int) -> None:
    assert (await s.post_event(event))[0] == 200
    await fake_lark.wait_for(lambda: len(fake_lark.sent) >= replies, timeout=30)
    assert await s.app.idle(30)


async def test_group_history_keeps_people_apart(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.users = {"ou_bob": {"name": "Bob"}, "ou_carol": {"name": "Carol"}}
    fake_llm.reply_text("Nice to meet you, Bob.").reply_text("You are Carol.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        bob = message_event(
            "@_user_1 my name is Bob", sender="ou_bob", mentions=[bot_mention()], **GROUP
        )
        await send(s, fake_lark, bob, 1)
        carol = message_event(
            "@_user_1 what is my name?", sender="ou_carol", mentions=[bot_mention()], **GROUP
        )
        await send(s, fake_lark, carol, 2)
    history = user_messages(fake_llm.requests[1])
    assert history == ["[Bob] my name is Bob", "[Carol] what is my name?"]
    system = fake_llm.requests[1]["messages"][0]["content"]
    assert "with Carol" in system and "keep people and what each said apart" in system
    assert fake_lark.contact_lookups == 2  # one lookup per person, then the cache


async def test_without_the_contact_scope_people_get_distinct_labels_and_owners_are_marked(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.contact_scope = False
    fake_llm.reply_text("ok").reply_text("ok")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        for n, sender in enumerate(("ou_a1b2c3d4", OWNER), 1):
            event = message_event(f"@_user_1 hi {n}", sender=sender, mentions=[bot_mention()])
            event["event"]["message"].update(GROUP)
            await send(s, fake_lark, event, n)
    assert user_messages(fake_llm.requests[1]) == [
        "[user-b2c3d4] hi 1",
        "[user-owner · owner] hi 2",
    ]
    assert fake_lark.contact_lookups == 1  # the missing scope is remembered, not re-asked


async def test_an_image_reaches_a_vision_model_downscaled(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.add_resource("om_img", "img_v3_big", jpeg((3000, 1000)), "image/jpeg")
    fake_llm.reply_text("A green rectangle.")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, llm={"vision": True})
    async with Served(settings) as s:
        event = message_event(
            message_id="om_img",
            message_type="image",
            content=json.dumps({"image_key": "img_v3_big"}),
        )
        await send(s, fake_lark, event, 1)
    [content] = user_messages(fake_llm.requests[0])
    [image] = images_of(content)
    assert image.size == (2048, 683)
    assert "sent an image (attached" in text_of(content)
    assert fake_lark.downloads == [("om_img", "img_v3_big")]
    saved = list((home / "inbox" / "oc_dm" / "om_img").iterdir())
    assert {p.name for p in saved} == {"img_v3_big", "img_v3_big.jpg"}


async def test_a_model_that_cannot_see_is_told_so(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.add_resource("om_img2", "img_k", jpeg((40, 40)), "image/jpeg")
    fake_llm.reply_text("I cannot see images here.")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, llm={"vision": False})
    async with Served(settings) as s:
        event = message_event(
            message_id="om_img2", message_type="image", content=json.dumps({"image_key": "img_k"})
        )
        await send(s, fake_lark, event, 1)
    [content] = user_messages(fake_llm.requests[0])
    assert isinstance(content, str)
    assert "You cannot see images with the current model" in content


async def test_images_inside_a_post_are_attached(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.add_resource("om_post", "img_a", jpeg((100, 50)), "image/jpeg")
    post = {
        "title": "",
        "content": [
            [{"tag": "text", "text": "compare these"}],
            [{"tag": "img", "image_key": "img_a"}],
        ],
    }
    fake_llm.reply_text("ok")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, llm={"vision": True})
    async with Served(settings) as s:
        event = message_event(message_id="om_post", message_type="post", content=json.dumps(post))
        await send(s, fake_lark, event, 1)
    [content] = user_messages(fake_llm.requests[0])
    assert "compare these" in text_of(content) and len(images_of(content)) == 1


async def test_pdf_and_docx_text_reach_the_model(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.add_resource("om_pdf", "file_pdf", pdf_with_text("Invoice 4711 total 99 EUR"))
    fake_lark.add_resource("om_doc", "file_doc", docx_with(["Minutes of the launch meeting"]))
    fake_llm.reply_text("ok").reply_text("ok")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        for n, (mid, key, name) in enumerate(
            [("om_pdf", "file_pdf", "invoice.pdf"), ("om_doc", "file_doc", "minutes.docx")], 1
        ):
            content = json.dumps({"file_key": key, "file_name": name})
            event = message_event(message_id=mid, message_type="file", content=content)
            await send(s, fake_lark, event, n)
    pdf, doc = (text_of(c) for c in user_messages(fake_llm.requests[1]))
    assert "Invoice 4711 total 99 EUR" in pdf and "invoice.pdf" in pdf
    assert "Minutes of the launch meeting" in doc and "owner | Dana" in doc
    assert (home / "inbox" / "oc_dm" / "om_doc" / "minutes.docx").exists()


async def test_a_quoted_reply_brings_its_parent_and_the_parents_image(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.users = {"ou_bob": {"name": "Bob"}}
    fake_lark.add_message(
        "om_parent",
        chat_id="oc_team",
        msg_type="image",
        sender={"id": "ou_bob", "id_type": "open_id", "sender_type": "user"},
        body={"content": json.dumps({"image_key": "img_q"})},
    )
    fake_lark.add_resource("om_parent", "img_q", jpeg((64, 64)), "image/jpeg")
    fake_llm.reply_text("It is a green square.")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, llm={"vision": True})
    async with Served(settings) as s:
        event = message_event(
            "@_user_1 what is in this?", mentions=[bot_mention()], parent_id="om_parent", **GROUP
        )
        await send(s, fake_lark, event, 1)
    [content] = user_messages(fake_llm.requests[0])
    text = text_of(content)
    assert text.startswith("[user-owner · owner] [In reply to Bob: [The user sent an image")
    assert "Bob sent an image (attached" in text and text.endswith("what is in this?")
    assert len(images_of(content)) == 1


async def test_a_merge_forward_is_expanded_with_senders_and_times(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.users = {"ou_bob": {"name": "Bob"}, "ou_eve": {"name": "Eve"}}

    def child(sender: str, ms: int, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        return {
            "message_id": f"om_c{ms}",
            "msg_type": msg_type,
            "create_time": str(ms),
            "sender": {"id": sender, "id_type": "open_id", "sender_type": "user"},
            "body": {"content": json.dumps(content)},
        }

    t0 = 1_764_583_200_000  # 2025-12-01 10:00 UTC = 18:00 in Asia/Shanghai
    fake_lark.add_forward(
        "om_fwd",
        [
            child("ou_bob", t0, "text", {"text": "ship it on Friday"}),
            child("ou_eve", t0 + 60_000, "image", {"image_key": "img_f"}),
        ],
        chat_id="oc_dm",
    )
    fake_llm.reply_text("Bob wants Friday.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        event = message_event(
            message_id="om_fwd",
            message_type="merge_forward",
            content=json.dumps({"content": "Merged and Forwarded Message"}),
        )
        await send(s, fake_lark, event, 1)
    [content] = user_messages(fake_llm.requests[0])
    assert content.splitlines() == [
        "[The user forwarded 2 messages:]",
        "- 2025-12-01 18:00 Bob: ship it on Friday",
        "- 2025-12-01 18:01 Eve: [an image; images inside a forwarded history cannot be fetched]",
    ]


async def test_bad_media_becomes_a_clear_note_never_a_crashed_turn(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.add_resource("om_huge", "file_huge", size=200 * 1024 * 1024)
    fake_lark.add_resource("om_bad", "img_bad", b"\xff\xd8\xff garbage, not a jpeg")
    cases = [
        ("om_huge", "file", {"file_key": "file_huge", "file_name": "dump.zip"}),
        ("om_bad", "image", {"image_key": "img_bad"}),
        ("om_gone", "file", {"file_key": "file_gone", "file_name": "gone.pdf"}),  # 404
    ]
    for _ in cases:
        fake_llm.reply_text("noted")
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, llm={"vision": True})
    async with Served(settings) as s:
        for n, (mid, kind, content) in enumerate(cases, 1):
            event = message_event(message_id=mid, message_type=kind, content=json.dumps(content))
            await send(s, fake_lark, event, n)
    huge, bad, gone = (text_of(c) for c in user_messages(fake_llm.requests[2]))
    assert "dump.zip), but it is larger than the 30.0 MB download limit" in huge
    assert "sent an image that could not be used: the image is corrupt" in bad
    assert "gone.pdf), but Lark would not hand it over (File not in msg., code 234003)" in gone
    assert fake_lark.texts() == ["noted"] * 3  # every turn answered
    assert not (home / "inbox" / "oc_dm" / "om_huge").exists()  # nothing half-written


async def test_voice_is_transcribed_when_a_transcription_model_is_set(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    fake_lark.add_resource("om_v1", "file_voice", b"OggS fake opus bytes")
    fake_lark.add_resource("om_v2", "file_voice2", b"OggS more fake opus")
    fake_llm.transcript = "please book the room for friday"
    fake_llm.reply_text("booked").reply_text("ok")
    audio = {"file_key": "file_voice", "duration": 3000}
    with_model = settings_for(
        home, fake_lark.domain, fake_llm.base_url, llm={"transcription_model": "whisper-1"}
    )
    async with Served(with_model) as s:
        event = message_event(message_id="om_v1", message_type="audio", content=json.dumps(audio))
        await send(s, fake_lark, event, 1)
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        audio2 = {"file_key": "file_voice2", "duration": 2000}
        event = message_event(message_id="om_v2", message_type="audio", content=json.dumps(audio2))
        await send(s, fake_lark, event, 2)
    heard, unheard = (text_of(c) for c in user_messages(fake_llm.requests[1]))
    assert heard.endswith("Transcript:]\nplease book the room for friday")
    assert fake_llm.transcriptions == [{"model": "whisper-1", "file": "voice.opus", "bytes": 20}]
    assert "You cannot hear it (no llm.transcription_model is set)" in unheard
