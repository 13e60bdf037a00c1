"""computer_use inside `larkbot serve`: its own Xvfb started and stopped, owners only in Lark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, message_event, settings_for
from tools.desktop.xinput import X11Display

GUEST = "ou_guest"
DESKTOP = {"enabled": True, "start_xvfb": True, "size": "1600x1000", "settle_seconds": 0.05}


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def advertised(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


async def turn(s: Served, fake_lark: FakeLark, sender: str) -> None:
    before = len(fake_lark.sent)
    event = message_event("what is on the screen?", sender=sender, chat_id=f"oc_{sender}")
    assert (await s.post_event(event))[0] == 200
    await fake_lark.wait_for(lambda: len(fake_lark.sent) > before, timeout=15)
    assert await s.app.idle(30)


async def test_serve_runs_its_own_xvfb_for_owners_only(
    home: Path, fake_lark: FakeLark, fake_llm: FakeLLM
) -> None:
    settings = settings_for(home, fake_lark.domain, fake_llm.base_url, computer_use=DESKTOP)
    fake_llm.reply_tools(("computer_use", {"action": "screenshot"})).reply_text("No.")
    fake_llm.reply_tools(("computer_use", {"action": "screenshot"})).reply_text("A desktop.")
    async with Served(settings) as s:
        display = s.app.core.runtime.services["desktop"]
        assert isinstance(display, X11Display)
        socket = Path(f"/tmp/.X11-unix/X{display.name.lstrip(':')}")
        assert socket.exists()

        await turn(s, fake_lark, GUEST)  # a non-owner: refused, never advertised
        assert "computer_use" not in advertised(fake_llm.requests[0])
        (refusal,) = tool_results(fake_llm.requests[1])
        assert "only the bot's owner" in refusal
        assert not (home / "screenshots").exists()

        await turn(s, fake_lark, OWNER)
        assert "computer_use" in advertised(fake_llm.requests[2])
        (done,) = tool_results(fake_llm.requests[3])[-1:]
        assert done.startswith("took a screenshot; screen 1600×1000, shown as 1280×800")
        (shot,) = (home / "screenshots").glob("computer_use-*.png")
        await fake_lark.wait_for(lambda: any(m["msg_type"] == "image" for m in fake_lark.sent), 15)
        (upload,) = fake_lark.uploads  # the screenshot went to Lark as an image message
        assert upload.kind == "image" and upload.content == shot.read_bytes()
        (image,) = [m for m in fake_lark.sent if m["msg_type"] == "image"]
        assert image["body"] == {"image_key": upload.key}
        assert [m["body"].get("text") for m in fake_lark.sent][-2:] == ["A desktop.", None]
    assert not socket.exists()  # serve stopped its Xvfb


async def test_doctor_checks_the_display(home: Path, monkeypatch: Any) -> None:
    import httpx

    from larkbot.config import parse_settings
    from larkbot.desktop import check_desktop

    monkeypatch.delenv("DISPLAY", raising=False)
    cases = [
        ({}, True, "off"),
        ({"enabled": True, "start_xvfb": True}, True, "serve will start Xvfb: screen 1280×800"),
        ({"enabled": True}, False, "no display"),
        ({"enabled": True, "display": ":4998"}, False, "cannot open X display :4998"),
    ]
    async with httpx.AsyncClient() as http:
        for section, ok, detail in cases:
            result = await check_desktop(parse_settings({"computer_use": section}), http)
            assert (result.ok, detail in result.detail) == (ok, True), result
        monkeypatch.setenv("PATH", str(home))  # nothing installed there
        missing = await check_desktop(parse_settings({"computer_use": {"enabled": True}}), http)
    assert not missing.ok and missing.detail == "xdotool, xclip not on PATH"
    assert missing.fix == "run: apt-get install xvfb xdotool xclip"
