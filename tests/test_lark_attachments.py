"""Files and images out: the attachment seam, both turn views, and their bad inputs."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from larkbot.config import LarkConfig
from larkbot.events import AttachmentReady, FinalAnswer
from larkbot.lark.api.client import LarkClient
from larkbot.lark.api.transport import RetryPolicy
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.delivery.attachments import ReplyTarget, deliver_attachment, file_type_for
from larkbot.lark.delivery.streaming import StreamingCardView
from larkbot.lark.delivery.turns import PlainReplyView
from tests.fakes.lark_server import FakeLark
from tools.attachments import FILE_MAX_BYTES, AttachmentError
from tools.base import Attachment

MSG = InboundMessage("om_user_1", "oc_chat", "group", "ou_owner", "hi", thread_id="omt_1")
TARGET = ReplyTarget("om_user_1", in_thread=True)


def png(path: Path, size: tuple[int, int] = (64, 48)) -> Path:
    """A real PNG file."""
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buf, "PNG")
    path.write_bytes(buf.getvalue())
    return path


@pytest.fixture
async def client(fake_lark: FakeLark) -> AsyncIterator[LarkClient]:
    """A LarkClient on FakeLark with quick retries."""
    async with httpx.AsyncClient() as http:
        retry = RetryPolicy(attempts=2, backoff_base=0.01)
        yield LarkClient(
            http, fake_lark.domain, fake_lark.app_id, fake_lark.app_secret, retry=retry
        )


def routes(fake: FakeLark) -> list[str]:
    return [r.route for r in fake.requests if "tenant_access_token" not in r.route]


async def test_an_image_is_uploaded_then_sent_as_an_image_reply_in_the_topic(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    shot = png(tmp_path / "shot.png")
    attachment = Attachment(str(shot), "image", "image/png", caption="the login page")
    message_id = await deliver_attachment(client, attachment, TARGET, "u-1")
    [upload] = fake_lark.uploads
    assert (upload.kind, upload.name, upload.content) == ("image", "shot.png", shot.read_bytes())
    image, caption = fake_lark.sent
    assert image["message_id"] == message_id
    assert (image["msg_type"], image["body"]) == ("image", {"image_key": upload.key})
    assert image["reply_to"] == "om_user_1" and image["reply_in_thread"]
    assert caption["body"] == {"text": "the login page"} and caption["reply_in_thread"]


async def test_a_pdf_goes_as_a_file_message_with_its_file_type(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4\n% a tiny pdf\n")
    await deliver_attachment(client, Attachment(str(report)), ReplyTarget(chat_id="oc_x"), "u-2")
    [upload] = fake_lark.uploads
    assert (upload.kind, upload.file_type, upload.name) == ("file", "pdf", "report.pdf")
    [sent] = fake_lark.sent
    assert (sent["msg_type"], sent["body"]) == ("file", {"file_key": upload.key})
    assert (sent["receive_id"], sent["reply_to"]) == ("oc_x", None)  # a new message, no reply


def test_file_types_follow_lark_upload_kinds() -> None:
    assert [file_type_for(n) for n in ("a.PDF", "b.docx", "c.xlsx", "d.pptx", "e.mp4")] == [
        "pdf",
        "doc",
        "xls",
        "ppt",
        "mp4",
    ]
    assert file_type_for("notes.md") == file_type_for("archive.tar.gz") == "stream"


async def test_a_corrupt_image_lark_cannot_read_goes_as_a_file(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really a png" * 10)
    await deliver_attachment(client, Attachment(str(broken), "image"), TARGET, "u-3")
    assert "POST /open-apis/im/v1/images" in routes(fake_lark)  # tried, refused with 234011
    assert [u.kind for u in fake_lark.uploads] == ["file"]
    assert [s["msg_type"] for s in fake_lark.sent] == ["file"]


async def test_too_large_and_missing_files_are_refused_before_any_upload(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as fh:  # sparse: 200 MB on paper, nothing on disk
        fh.truncate(200 * 1024 * 1024)
    with pytest.raises(AttachmentError, match=r"huge.bin is 200.0 MB, over Lark's 30.0 MB"):
        await deliver_attachment(client, Attachment(str(huge)), TARGET, "u-4")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(AttachmentError, match="empty"):
        await deliver_attachment(client, Attachment(str(empty)), TARGET, "u-5")
    with pytest.raises(AttachmentError, match="does not exist"):
        await deliver_attachment(client, Attachment(str(tmp_path / "nope")), TARGET, "u-6")
    assert routes(fake_lark) == [] and FILE_MAX_BYTES == 30 * 1024 * 1024


async def test_the_fake_refuses_oversized_uploads_like_lark(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    from larkbot.lark.api.errors import LarkAPIError

    with pytest.raises(LarkAPIError) as err:
        await client.upload_file(b"x" * (FILE_MAX_BYTES + 1), "big.bin", "stream")
    assert err.value.code == 234006
    with pytest.raises(LarkAPIError) as err:
        await client.upload_file(b"x", "a.bin", "exe")
    assert err.value.code == 234001


async def test_a_rejected_upload_becomes_a_notice_in_the_chat_not_a_failed_turn(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    report = tmp_path / "report.csv"
    report.write_text("a,b\n1,2\n")
    fake_lark.fail_next("POST /open-apis/im/v1/files", status=400, code=234001, msg="bad param")
    view = PlainReplyView(client, MSG)
    await view.on_event(AttachmentReady("c1", "report", Attachment(str(report))))
    await view.finish(FinalAnswer("Here is the report."))
    answer, notice = fake_lark.texts()
    assert answer == "Here is the report."
    assert notice == "(Could not send report.csv: Lark refused report.csv (bad param, code 234001))"


async def test_plain_view_posts_tool_attachments_after_the_answer(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    shot = png(tmp_path / "page.png")
    view = PlainReplyView(client, MSG)
    await view.on_event(AttachmentReady("c1", "browser_page", Attachment(str(shot), "image")))
    await view.finish(FinalAnswer("The page is up."))
    assert [s["msg_type"] for s in fake_lark.sent] == ["text", "image"]
    assert all(s["reply_in_thread"] for s in fake_lark.sent)
    uuids = [s["uuid"] for s in fake_lark.sent]
    assert len(set(uuids)) == 2
    await view.finish(FinalAnswer("The page is up."))  # a re-run: nothing is posted twice
    assert [s["msg_type"] for s in fake_lark.sent] == ["text", "image"]
    assert fake_lark.dedup_hits == 1


async def test_streaming_view_posts_tool_attachments_after_the_card(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    shot = png(tmp_path / "desk.png")
    view = StreamingCardView(client, MSG, LarkConfig(), delay=0)
    await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)  # the live card
    await view.on_event(AttachmentReady("c1", "computer_use", Attachment(str(shot), "image")))
    await view.finish(FinalAnswer("Done."))
    assert [s["msg_type"] for s in fake_lark.sent] == ["interactive", "image"]
    assert fake_lark.sent[1]["reply_to"] == "om_user_1"


async def test_a_failed_turn_still_delivers_what_tools_produced(
    tmp_path: Path, fake_lark: FakeLark, client: LarkClient
) -> None:
    shot = png(tmp_path / "half.png")
    view = PlainReplyView(client, MSG)
    await view.on_event(AttachmentReady("c1", "browser_page", Attachment(str(shot), "image")))
    await view.fail("it took too long.")
    assert [s["msg_type"] for s in fake_lark.sent] == ["text", "image"]


async def test_every_piece_of_a_streamed_answer_stays_in_the_topic(
    fake_lark: FakeLark, client: LarkClient
) -> None:
    from larkbot.events import TextDelta

    view = StreamingCardView(client, MSG, LarkConfig(), delay=0)
    await fake_lark.wait_for(lambda: len(fake_lark.sent) == 1)
    long_answer = "\n\n".join(f"## Part {i}\n" + "word " * 2000 for i in range(6))
    await view.on_event(TextDelta(long_answer))
    await view.finish(
        FinalAnswer(long_answer, [{"lark_card": {"schema": "2.0", "body": {"elements": []}}}])
    )
    assert len(fake_lark.sent) >= 3  # the live card, the rest of the answer, the ui card
    assert all(s["reply_in_thread"] and s["reply_to"] == "om_user_1" for s in fake_lark.sent)
