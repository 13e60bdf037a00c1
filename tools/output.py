"""Fitting tool output into the model's context.

Every result is capped at `MAX_OUTPUT_CHARS`. Results of tools with `no_compress=False` are
first compressed losslessly-for-a-reader: trailing spaces stripped, runs of spaces/tabs
collapsed to one, runs of blank lines collapsed to one; if still too long, the middle is
cut (head and tail kept, since errors and summaries tend to sit at the end). Results of
`no_compress=True` tools are passed verbatim and, only when over the cap, cut at the end.
Every cut leaves a visible marker saying how many characters were removed.
"""

from __future__ import annotations

import re

MAX_OUTPUT_CHARS = 8000

_SPACES = re.compile(r"[ \t]+")
_TRAILING = re.compile(r"[ \t]+\n")
_BLANKS = re.compile(r"\n{3,}")


def cut_marker(removed: int) -> str:
    """The visible note left where text was removed."""
    return f"\n[… {removed} chars cut …]\n"


def compress(text: str) -> str:
    """Collapse whitespace runs and blank lines (what a reader of the output would not miss)."""
    text = _TRAILING.sub("\n", text)
    text = _SPACES.sub(" ", text)
    return _BLANKS.sub("\n\n", text)


def cut_tail(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Keep the first `limit` characters and mark how many were removed."""
    if len(text) <= limit:
        return text
    return text[:limit] + cut_marker(len(text) - limit)


def cut_middle(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Keep the head (2/3) and the tail (1/3) of `limit` characters, marking the cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return text[:head] + cut_marker(len(text) - limit) + text[-tail:]


def fit_output(text: str, no_compress: bool, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Apply the policy above to one tool result."""
    if no_compress:
        return cut_tail(text, limit)
    if len(text) <= limit // 2:
        return text  # short results are left exactly as the tool wrote them
    return cut_middle(compress(text), limit)
