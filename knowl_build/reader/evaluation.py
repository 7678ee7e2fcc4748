"""Retrieval measured: each question of an eval file asked of an artifact, as `knowl search`
asks it, and scored.

- rank: the 1-based position of the first expected page among the top 100 hits, or None;
- recall@k: the share of the expected pages found in the top k;
- reciprocal rank (MRR@10 is its mean): 1/rank when rank <= 10, else 0;
- nDCG@10: binary relevance (an expected page is 1, any other 0), log2 discount, divided by
  the DCG of the ideal order (every expected page first).

A question passes when every expected page is in its top k. An expected page the artifact
does not have, or that the question's user may not see, is never found (it is named in
`missing`, with the reason), as `knowl show` would answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from knowl_build.core.errors import AmbiguousPage, PageNotFound
from knowl_build.parse.evalfile import MAX_K, Question
from knowl_build.reader import Reader

DEPTH = MAX_K  # hits asked per question: a rank below this is no rank
CUTOFF = 10  # of MRR and nDCG


@dataclass(frozen=True, slots=True)
class Scored:
    question: Question
    ranks: dict[str, int | None]  # each expected page as written -> its rank
    missing: dict[str, str]  # an expected page the artifact cannot name -> why
    top: tuple[str, ...]  # the first k hits, as `scope:id`

    @property
    def rank(self) -> int | None:
        found = [r for r in self.ranks.values() if r is not None]
        return min(found) if found else None

    @property
    def recall(self) -> float:
        k = self.question.k
        hits = sum(1 for r in self.ranks.values() if r is not None and r <= k)
        return hits / len(self.ranks)

    @property
    def reciprocal_rank(self) -> float:
        rank = self.rank
        return 1.0 / rank if rank is not None and rank <= CUTOFF else 0.0

    @property
    def ndcg(self) -> float:
        return ndcg([r for r in self.ranks.values() if r is not None], len(self.ranks))

    @property
    def passed(self) -> bool:
        return all(r is not None and r <= self.question.k for r in self.ranks.values())


def ndcg(ranks: Sequence[int], relevant: int, cutoff: int = CUTOFF) -> float:
    """nDCG@cutoff of binary relevance: `ranks` of the relevant items found, of `relevant`."""
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= cutoff)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(relevant, cutoff) + 1))
    return dcg / ideal if ideal else 0.0


def score(reader: Reader, questions: Sequence[Question]) -> list[Scored]:
    """Every question asked of `reader`'s own artifact (its peers are not asked: the file tests
    this project's retrieval), with the search defaults of `knowl search` (active pages)."""
    return [_score(reader, q) for q in questions]


def _score(reader: Reader, question: Question) -> Scored:
    view = reader.view
    wanted: dict[str, tuple[str, str]] = {}
    missing: dict[str, str] = {}
    for ref in question.pages:
        try:
            entry = view.resolve(ref, question.user)
        except (PageNotFound, AmbiguousPage) as exc:
            missing[ref] = str(exc)
            continue
        wanted[ref] = (entry.scope, entry.id)
    answer = reader.search(question.query, user=question.user, limit=DEPTH, kind="page")
    order = [
        (hit["scope"], hit["page"])
        for hit in answer["hits"]
        if hit["kind"] == "page" and hit["repo"] == view.repo
    ]
    position: dict[tuple[str, str], int] = {}
    for n, key in enumerate(order, 1):
        position.setdefault(key, n)
    ranks: dict[str, int | None] = {
        ref: position.get(wanted[ref]) if ref in wanted else None for ref in question.pages
    }
    top = tuple(f"{scope}:{page}" for scope, page in order[: question.k])
    return Scored(question, ranks, missing, top)
