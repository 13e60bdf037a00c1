"""Persistence: one SQL database (SQLite by default, PostgreSQL for several replicas)."""

from larkbot.storage.db import Database, metadata

__all__ = ["Database", "metadata"]
