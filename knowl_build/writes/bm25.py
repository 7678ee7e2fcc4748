"""Okapi BM25 over small in-memory collections (token counts), for `knowl store`'s candidates.

The built index ranks with Whoosh (the index package); this is for questions asked before any
build.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

K1 = 1.2
B = 0.75


def bm25_scores(docs: Sequence[Counter[str]], query: Iterable[str]) -> list[float]:
    """One score per document for the query's terms (each counted once)."""
    n = len(docs)
    if not n:
        return []
    avg = sum(sum(d.values()) for d in docs) / n or 1.0
    df: Counter[str] = Counter(term for d in docs for term in d)
    terms = set(query)
    scores = []
    for counts in docs:
        length = sum(counts.values())
        score = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))
        scores.append(score)
    return scores
