"""Turning text into index terms and user queries into safe FTS5 MATCH expressions."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_WORD = rf"(?:(?![{_CJK}])[^\W_])+"
_TERM = re.compile(rf"[{_CJK}]+|{_WORD}(?:[-_.'+#]{_WORD})*")
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")
# Question words and particles that carry no topic; removed from queries before matching.
_STOP_TEXT = """
的 了 和 与 是 在 吗 呢 吧 啊 怎么 怎么样 怎样 如何 什么 哪里 哪些 几点 为什么 做法 一下
the a an of to and or in on for how what when where which is are do does
"""
STOPWORDS = frozenset(_STOP_TEXT.split())
_STOP_CJK = re.compile("|".join(sorted((w for w in STOPWORDS if _CJK_RUN.match(w)), key=len)[::-1]))


@dataclass
class Query:
    """A parsed query: FTS5 MATCH text (may be empty) and short terms matched with LIKE."""

    match: str = ""
    short: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    highlight: list[str] = field(default_factory=list)


def quote(term: str) -> str:
    """One FTS5 string literal: any syntax in it (AND, *, :, quotes) is taken literally."""
    return '"' + term.replace('"', '""') + '"'


def query_terms(text: str) -> list[str]:
    """Words and CJK runs of a query, lower-cased, stopwords removed, order kept, no repeats."""
    out: list[str] = []
    for raw in _TERM.findall(text.lower()):
        parts = _STOP_CJK.split(raw) if _CJK_RUN.match(raw) else [raw]
        for part in parts:
            if part and part not in STOPWORDS and part not in out:
                out.append(part)
    return out


class Tokenizer:
    """How documents are stored and queries matched; subclasses pick the FTS5 tokenizer."""

    name = "base"
    fts_tokenize = "unicode61"

    def doc(self, text: str) -> str:
        """The text put in the FTS table for a document field."""
        return text

    def parse(self, text: str) -> Query:
        """Build the MATCH expression for a user query."""
        raise NotImplementedError


class TrigramTokenizer(Tokenizer):
    """FTS5 trigram: substring matches in any script; terms under 3 chars fall back to LIKE."""

    name = "trigram"
    fts_tokenize = "trigram"

    def parse(self, text: str) -> Query:
        """Terms of 3+ chars (CJK runs as overlapping trigrams) are OR-ed; shorter ones LIKE."""
        q = Query(terms=query_terms(text))
        grams: list[str] = []
        for term in q.terms:
            if len(term) < 3:
                q.short.append(term)
            elif _CJK_RUN.match(term):
                grams += [term[i : i + 3] for i in range(len(term) - 2)]
            else:
                grams.append(term)
        q.match = " OR ".join(quote(g) for g in dict.fromkeys(grams))
        q.highlight = [*q.terms, *grams]
        return q


class JiebaTokenizer(Tokenizer):
    """jieba word segmentation (rjieba: jieba-rs, same dictionary, ~100x faster than jieba).

    Words are stored space-separated and indexed by unicode61 with Porter stems, so English
    gets stemming and Chinese gets words (and their sub-words, `cut_for_search`).
    """

    name = "jieba"
    fts_tokenize = "porter unicode61 remove_diacritics 2"

    def __init__(self) -> None:
        import rjieba  # imported only when this tokenizer is chosen

        self._cut: Callable[[str], list[str]] = rjieba.cut_for_search

    def doc(self, text: str) -> str:
        """Segmented text: CJK words separated by spaces."""
        return " ".join(self._cut(text))  # whitespace tokens just separate words

    def parse(self, text: str) -> Query:
        """Each segmented word of the query as a quoted term, OR-ed."""
        q = Query(terms=query_terms(text))
        words: list[str] = []
        for term in q.terms:
            words += [w for w in self._cut(term) if w.strip() and w not in STOPWORDS]
        q.match = " OR ".join(quote(w) for w in dict.fromkeys(words))
        q.highlight = [*q.terms, *sorted(set(words), key=len, reverse=True)]
        return q


def snippet(body: str, highlight: list[str], width: int = 160) -> str:
    """About `width` characters of `body` around the first query term found in it."""
    text = " ".join(body.split())
    low = text.lower()
    found = [i for i in (low.find(t) for t in highlight if t) if i >= 0]
    pos = min(found, default=0)
    start = max(0, pos - width // 3) if found else 0
    end = start + width
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def make_tokenizer(name: str) -> Tokenizer:
    """The tokenizer called `name` ("trigram" or "jieba")."""
    if name == "jieba":
        return JiebaTokenizer()
    if name == "trigram":
        return TrigramTokenizer()
    raise ValueError(f"unknown knowledge tokenizer {name!r}; use 'trigram' or 'jieba'")
