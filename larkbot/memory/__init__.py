"""Long-term memory: per person (`me`) and per chat, recalled every turn, consolidated nightly."""

from larkbot.memory.service import MemoryRefused, MemoryService
from larkbot.memory.store import Memory

__all__ = ["Memory", "MemoryRefused", "MemoryService"]
