"""Chat-model providers: the OpenAI-compatible Chat Completions client and its event types."""

from larkbot.providers.base import (
    ChatProvider,
    Completion,
    Message,
    StreamEvent,
    TextChunk,
    ToolCall,
)
from larkbot.providers.openai_compat import OpenAICompatProvider

__all__ = [
    "ChatProvider",
    "Completion",
    "Message",
    "OpenAICompatProvider",
    "StreamEvent",
    "TextChunk",
    "ToolCall",
]
