"""Words of a memory and BM25 over a small candidate set (one person's and one chat's memories).

Chinese is segmented with the knowledge base's jieba tokenizer (rjieba); other scripts split on
word boundaries. Each memory's words are computed once, when it is saved, and stored with it,
so a turn's recall only segments the message itself.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import cache

from larkbot.knowledge.query import STOPWORDS, JiebaTokenizer, query_terms
from larkbot.memory.store import Memory

K1, B = 1.2, 0.75


@cache
def segmenter() -> JiebaTokenizer:
    """The jieba segmenter. The first call imports rjieba, which builds its dictionary: about
    100 ms holding the interpreter, so `MemoryService.init` makes it off the event loop."""
    return JiebaTokenizer()


def words(text: str) -> list[str]:
    """Lower-cased search words of `text`: jieba words for CJK runs, stopwords dropped."""
    cut = segmenter().doc
    out: list[str] = []
    for term in query_terms(text):
        for word in cut(term).split() if not term.isascii() else [term]:
            if word not in STOPWORDS:
                out.append(_stem(word))
    return out


def _stem(word: str) -> str:
    """A crude English plural/3rd-person cut, so "prefers" finds "prefer"."""
    if len(word) > 3 and word.isascii() and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def rank(query: str, candidates: Sequence[Memory]) -> list[tuple[float, Memory]]:
    """Candidates matching `query`, best first (BM25, idf over the candidate set)."""
    wanted = set(words(query))
    if not wanted or not candidates:
        return []
    docs = [m.terms.split() for m in candidates]
    avg = sum(len(d) for d in docs) / len(docs) or 1.0
    df = Counter(w for d in docs for w in set(d) if w in wanted)
    n = len(docs)
    scored = []
    for memory, doc in zip(candidates, docs, strict=True):
        tf = Counter(w for w in doc if w in wanted)
        if not tf:
            continue
        norm = K1 * (1 - B + B * len(doc) / avg)
        score = sum(
            math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * f * (K1 + 1) / (f + norm)
            for w, f in tf.items()
        )
        scored.append((score, memory))
    scored.sort(key=lambda pair: (-pair[0], -pair[1].created_at))
    return scored
