"""send_file end to end: signed Lark events → agent → upload + image/file reply; refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM, FakeToolCall
from tests.lark_harness import Served, message_event, settings_for
from tests.test_cards_approval_e2e import approval_cards, approval_id_of, post_click
from tests.test_core_cli import larkbot, write_config


def tool_results(request: dict[str, Any]) -> list[str]:
    """The tool messages the model saw in a request."""
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def make_files(tmp_path: Path) -> tuple[Path, Path]:
    buf = io.BytesIO()
    Image.new("RGB", (320, 200), (10, 120, 200)).save(buf, "PNG")
    chart = tmp_path / "chart.png"
    chart.write_bytes(buf.getvalue())
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4\n" + b"0" * 2048)
    return chart, report


async def run_turn(served: Served, fake_lark: FakeLark, sender: str, count: int) -> None:
    event = message_event("send me the chart and the report", sender=sender)
    assert (await served.post_event(event))[0] == 200
    assert await served.app.idle(30)
    await fake_lark.wait_for(lambda: len(fake_lark.sent) >= count)


async def test_owner_gets_an_image_and_a_pdf(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    chart, report = make_files(tmp_path)
    fake_llm.reply_tools(
        FakeToolCall("send_file", {"path": str(chart), "caption": "Q3 revenue"}),
        FakeToolCall("send_file", {"path": str(report)}),
    )
    fake_llm.reply_text("Both are in the chat.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        await run_turn(s, fake_lark, "ou_owner", 4)
    kinds = sorted(u.kind for u in fake_lark.uploads)
    assert kinds == ["file", "image"]
    pdf = next(u for u in fake_lark.uploads if u.kind == "file")
    assert (pdf.file_type, pdf.content) == ("pdf", report.read_bytes())
    by_type = {s["msg_type"]: s for s in fake_lark.sent}
    assert by_type["image"]["body"]["image_key"].startswith("img_v3_")
    assert by_type["file"]["body"]["file_key"] == pdf.key
    assert "Q3 revenue" in fake_lark.texts() and fake_lark.texts()[-1] == "Both are in the chat."
    results = tool_results(fake_llm.requests[1])
    assert any(r.startswith("Sent chart.png") and "as an image" in r for r in results)
    assert any(r.startswith("Sent report.pdf (2.0 KB)") and "as a file" in r for r in results)


async def test_non_owner_send_file_is_refused_and_nothing_leaves(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    _, report = make_files(tmp_path)
    fake_llm.reply_tools(FakeToolCall("send_file", {"path": str(report)}))
    fake_llm.reply_text("I cannot send files for you.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        await run_turn(s, fake_lark, "ou_stranger", 1)
    assert fake_lark.uploads == [] and [m["msg_type"] for m in fake_lark.sent] == ["text"]
    first = json.dumps(fake_llm.requests[0]["tools"] or [])
    assert "send_file" not in first  # not even advertised to a non-owner
    [result] = tool_results(fake_llm.requests[1])
    assert result.startswith("Error") and "owner" in result


async def test_bad_paths_come_back_to_the_model_as_errors(
    home: Path, tmp_path: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    huge = tmp_path / "dump.bin"
    with huge.open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse 200 MB
    secrets = home / ".secrets"
    secrets.mkdir()
    (secrets / "token").write_text("s3cret")
    fake_llm.reply_tools(
        FakeToolCall("send_file", {"path": str(huge)}),
        FakeToolCall("send_file", {"path": str(secrets / "token")}),
        FakeToolCall("send_file", {"path": str(tmp_path / "missing.pdf")}),
    )
    fake_llm.reply_text("Those could not be sent.")
    async with Served(settings_for(home, fake_lark.domain, fake_llm.base_url)) as s:
        assert (await s.post_event(message_event("send me those", sender="ou_owner")))[0] == 200
        # the bot's own files are asked for every time (the policy); approved, the tool refuses
        await fake_lark.wait_for(lambda: len(approval_cards(fake_lark)) == 1, timeout=30)
        card = approval_cards(fake_lark)[0]
        assert "token" in json.dumps(card)
        assert (await post_click(s, approval_id_of(card), "approve"))["toast"]
        assert await s.app.idle(30)
        await fake_lark.wait_for(lambda: "Those could not be sent." in fake_lark.texts())
    assert fake_lark.uploads == []
    results = tool_results(fake_llm.requests[1])
    assert any("dump.bin is 200.0 MB, over Lark's 30.0 MB limit" in r for r in results)
    assert any("secrets directory" in r for r in results), results
    assert any("does not exist" in r for r in results)
    assert all(r.startswith("Error") for r in results)


async def test_chat_prints_the_path_of_an_attachment(
    home: Path, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    chart, _ = make_files(tmp_path)
    config = write_config(home, fake_llm.base_url)
    fake_llm.reply_tools(FakeToolCall("send_file", {"path": str(chart), "caption": "Q3"}))
    fake_llm.reply_text("Attached.")
    code, out, err = await larkbot(home, "chat", "--config", str(config), stdin=b"chart\ny\n")
    assert code == 0, err
    assert f"📎 image from send_file: {chart} — Q3" in out
