"""The owner's knowledge base: Markdown notes with front matter, indexed for search."""

from larkbot.knowledge.notes import KnowledgeError, Note
from larkbot.knowledge.service import KnowledgeBase, SearchResult, default_index_path

__all__ = ["KnowledgeBase", "KnowledgeError", "Note", "SearchResult", "default_index_path"]
