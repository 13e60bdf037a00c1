"""Small checks on text people type, shared by the channels (ground floor)."""

from __future__ import annotations


def is_number(text: str) -> bool:
    """A plain non-negative number: ASCII digits only ("²".isdigit() is True, int("²") fails)."""
    return text.isascii() and text.isdigit()
