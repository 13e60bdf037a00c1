"""`larkbot chat` shows a ui_card as text: FakeLLM calls ui_card, the terminal view renders it."""

from __future__ import annotations

import io
from pathlib import Path

from larkbot.chat import TerminalView
from tests.cards_samples import SAMPLES
from tests.core_helpers import collect, ctx, make_rig
from tests.fakes.llm import FakeLLM
from tools.builtin.ui_card import UiCardTool


async def test_chat_renders_a_ui_card_as_text(home: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply_tools(("ui_card", {"card": SAMPLES["compare"]})).reply_text("Redmi wins.")
    rig = await make_rig(fake_llm.base_url, home, [UiCardTool(channel="cli")])
    try:
        out = io.StringIO()
        view = TerminalView(out)
        for event in await collect(rig.agent, "compare phones", ctx()):
            view.show(event)
    finally:
        await rig.close()
    text = out.getvalue()
    assert "╭" in text and "╰" in text
    assert "│ Model        │ Price │ Battery  │" in text
    assert "│ 华为 nova 12 │ 2999  │ 4600 mAh │" in text
    assert text.rstrip().endswith("Redmi wins.")
    box = text[text.index("╭") : text.index("╰")]
    assert "{" not in box  # rendered, not dumped as JSON
