"""Long-term memory: per person (`me`) and per chat, recalled every turn, consolidated nightly."""

from larkbot.memory.service import MemoryError, MemoryService
from larkbot.memory.store import Memory

__all__ = ["Memory", "MemoryError", "MemoryService"]
