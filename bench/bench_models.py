"""History token estimate (providers/tokens.py) against a real BPE tokenizer, same run.

The budget uses DeepSeek's published ratios instead of a tokenizer download. This measures what
that costs in accuracy and what it saves in time, with tiktoken's cl100k_base (the copy LiteLLM
ships, so nothing is fetched) as the baseline: estimate / cl100k tokens on the saved English and
Chinese pages of bench/fixtures/html/, and the time to measure a 200-turn history both ways.
Over 1.0 means the budget errs on the safe side (counts more than the model will).
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

from larkbot.providers.base import Message
from larkbot.providers.tokens import messages_tokens, text_tokens

FIXTURES = Path(__file__).parent / "fixtures" / "html"
TURNS = 200


def _cl100k():  # type: ignore[no-untyped-def]
    """tiktoken's cl100k_base from LiteLLM's bundled cache, or None when not installed."""
    litellm = importlib.util.find_spec("litellm")  # located, not imported (its import goes online)
    try:
        import tiktoken
    except ImportError:
        return None
    if litellm is None or not litellm.submodule_search_locations:
        return None
    bundled = Path(litellm.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    return tiktoken.get_encoding("cl100k_base")


def _history(texts: list[str]) -> list[Message]:
    out: list[Message] = []
    for n in range(TURNS):
        body = texts[n % len(texts)]
        start = (n * 97) % max(1, len(body) - 400)
        out.append({"role": "user", "content": body[start : start + 200]})
        out.append({"role": "assistant", "content": body[start + 200 : start + 400]})
    return out


def main() -> None:
    """Print estimate/cl100k ratios per language and the timing ratio."""
    enc = _cl100k()
    if enc is None:
        print("tiktoken not installed (dev dependency via litellm): skipped")
        return
    pages = {p.stem: p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.txt"))}
    groups = {
        "English": [t for name, t in pages.items() if not name.startswith("zh-")],
        "Chinese": [t for name, t in pages.items() if name.startswith("zh-")],
    }
    for label, texts in groups.items():
        estimate = sum(text_tokens(t) for t in texts)
        real = sum(len(enc.encode(t)) for t in texts)
        chars = sum(len(t) for t in texts)
        print(
            f"{label:8} {chars:7,} chars: estimate {estimate:6,} / cl100k {real:6,} tokens"
            f" = {estimate / real:.2f}x"
        )
    history = _history([t for texts in groups.values() for t in texts])
    started = time.perf_counter()
    for _ in range(5):
        estimated = messages_tokens(history)
    ours = (time.perf_counter() - started) / 5
    started = time.perf_counter()
    for _ in range(5):
        real = sum(len(enc.encode(str(m["content"]))) + 4 for m in history)
    theirs = (time.perf_counter() - started) / 5
    print(
        f"{TURNS}-turn history: estimate {estimated:,} vs cl100k {real:,} tokens "
        f"({estimated / real:.2f}x); measured in {ours * 1000:.2f} ms vs {theirs * 1000:.2f} ms"
        f" (estimate/tokenizer time {ours / theirs:.2f}x)"
    )
