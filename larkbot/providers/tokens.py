"""Token estimates for history budgets: a documented ratio, not a tokenizer download.

Tokenizer files (tiktoken's BPE ranks, Hugging Face tokenizer.json) are fetched from hubs at run
time, which a self-hosted bot often cannot reach, and every provider tokenizes differently
anyway. So the budget uses the ratios DeepSeek publishes (api-docs.deepseek.com/quick_start/
token_usage: "1 English character ≈ 0.3 token, 1 Chinese character ≈ 0.6 token"), rounded up,
plus per-message framing and a fixed cost per image; the providers' `usage` stays the truth
for accounting.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from larkbot.providers.base import Message

MESSAGE_OVERHEAD = 4  # role and separators around each message (OpenAI cookbook: 3-4)
# DashScope Qwen-VL: one token per 28x28 pixels, at most 1280 per image by default; OpenAI's
# high detail 1024x1024 is 765. The larger figure keeps the budget on the safe side.
IMAGE_TOKENS = 1280
CJK_RATIO, OTHER_RATIO = 0.6, 0.3


# CJK punctuation, kana, unified ideographs; Hangul; compatibility ideographs; full-width forms;
# the supplementary ideograph planes. One regex pass is ~10x faster than a per-character loop.
_CJK = re.compile("[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002ffff]")


def text_tokens(text: str) -> int:
    """Estimated tokens of a piece of text."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return math.ceil(cjk * CJK_RATIO + (len(text) - cjk) * OTHER_RATIO)


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):  # content parts: text and image_url
        total = 0
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("image_url", "input_image", "image"):
                total += IMAGE_TOKENS
            else:
                total += text_tokens(str(part.get("text", "")))
        return total
    return text_tokens(json.dumps(content, ensure_ascii=False)) if content else 0


def message_tokens(message: Message) -> int:
    """Estimated tokens of one message: content (text, images, tool results), calls, reasoning."""
    total = MESSAGE_OVERHEAD + _content_tokens(message.get("content"))
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        total += MESSAGE_OVERHEAD + text_tokens(str(fn.get("name", "")))
        total += text_tokens(str(fn.get("arguments", "")))
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str):  # sent back on some providers' tool turns
        total += text_tokens(reasoning)
    return total


def messages_tokens(messages: Iterable[Message]) -> int:
    """Estimated tokens of several messages."""
    return sum(message_tokens(m) for m in messages)


def tools_tokens(tools: Iterable[dict[str, Any]]) -> int:
    """Estimated tokens of the tool schemas sent with a request."""
    return sum(text_tokens(json.dumps(t, ensure_ascii=False)) for t in tools)
