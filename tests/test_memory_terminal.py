"""`larkbot chat` (piped): the owner's memory is saved by the model, listed by /memory and
removed by /forget all, without the model being asked."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.llm import FakeLLM
from tests.test_core_cli import larkbot, write_config


async def test_memory_and_forget_at_the_terminal(home: Path, fake_llm: FakeLLM) -> None:
    config = write_config(home, fake_llm.base_url)
    fake_llm.reply_tools(("memory_save", {"content": "The owner takes tea without sugar"}))
    fake_llm.reply_text("Noted.")
    stdin = b"remember: tea without sugar\n/memory\n/forget all\n/memory\n"
    code, out, err = await larkbot(home, "chat", "--config", str(config), stdin=stdin)
    assert code == 0, err
    listing, _, after = out.partition("Forgot 1 memories about you.")
    assert "The owner takes tea without sugar" in listing.rpartition("/memory")[2]
    assert "I don't remember anything about you here yet." in after
    assert len(fake_llm.requests) == 2  # the commands never reached the model
