"""Reconciliation (SPEC 7.1): the pages a new one may repeat or supersede, by BM25 over\nsignificant tokens, and how close they are."""

from __future__ import annotations

import re
from collections import Counter

from knowl_build.core.model import DRAFT, Page
from knowl_build.rules.fields import normalize_conflict_key
from knowl_build.writes.bm25 import bm25_scores
from knowl_build.writes.common import Tree
from knowl_build.writes.request import Request

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "our",
        "the",
        "this",
        "to",
        "use",
        "uses",
        "using",
        "what",
        "with",
    ]
)


NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nor",
        "without",
        "cannot",
        "longer",
        "unable",
        "isn",
        "aren",
        "wasn",
        "weren",
        "doesn",
        "didn",
        "hasn",
        "haven",
        "hadn",
        "couldn",
        "shouldn",
        "wouldn",
    ]
)


OVERLAP = 0.35


CANDIDATES = 3


_SPLIT = re.compile(r"[^a-z0-9_]+")


_SPACES = re.compile(r"\s+")


def tokens(text: str) -> list[str]:
    """Significant tokens: lowercased, split on [^a-z0-9_]+, 2+ characters, no stop words."""
    return [t for t in _SPLIT.split(text.lower()) if len(t) >= 2 and t not in STOP_WORDS]


def overlap(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def normalized(text: str) -> str:
    return _SPACES.sub(" ", text.lower()).strip()


def _page_tokens_text(
    title: str, content: str, reasoning: str | None, tags: list[str] | tuple[str, ...]
) -> str:
    return f"{title}\n{content}\n{reasoning or ''}\n{' '.join(tags)}"


def _body(tree: Tree, page: Page) -> str:
    return tree.text(page.path)[page.parsed.body_offset :]


def candidates(tree: Tree, request: Request, scope: str) -> list[Page]:
    """BM25 over the active pages of the same category and scope; the best three. A draft is
    also compared with the drafts, so an agent that repeats itself writes nothing twice."""
    statuses = ("active", DRAFT) if request.status == DRAFT else ("active",)
    pool = [
        p
        for p in tree.analysis.pages
        if p.parsed.text_ok
        and p.scope == scope
        and p.parsed.fields.status in statuses
        and p.parsed.fields.category == request.category
    ]
    docs = []
    for page in pool:
        f = page.parsed.fields
        docs.append(
            Counter(tokens(_page_tokens_text(page.title, _body(tree, page), f.reasoning, f.tags)))
        )
    query = set(
        tokens(_page_tokens_text(request.title, request.content, request.reasoning, request.tags))
    )
    if not docs or not query:
        return []
    scored = [
        (score, page)
        for score, page in zip(bm25_scores(docs, query), pool, strict=True)
        if score > 0
    ]
    scored.sort(key=lambda sp: (-sp[0], sp[1].id, sp[1].path))
    return [page for _, page in scored[:CANDIDATES]]


def _adds_nothing(request: Request, match: Page) -> bool:
    f = match.parsed.fields
    conflict = None
    if request.conflict_key is not None:
        conflict = (
            normalize_conflict_key(request.conflict_key),
            tuple(sorted(request.conflict_scope.items())),
            request.exclusive,
        )
    have = (
        None
        if f.conflict is None
        else (f.conflict.normalized_key, f.conflict.scope, f.conflict.exclusive)
    )
    return all(
        (
            set(request.tags) <= set(f.tags),
            set(request.paths) <= {a.value for a in f.affected_paths},
            set(request.sl_refs) <= {r.value for r in f.sl_refs},
            set(request.refs) <= {r.value for r in f.refs},
            request.reasoning in (None, f.reasoning),
            set(request.alternatives) <= set(f.alternatives),
            set(request.steps) <= set(f.steps),
            request.source in (None, f.source),
            request.confidence in (None, f.confidence),
            conflict is None or conflict == have,
            request.usage_mode in (None, f.usage_mode),
            request.visibility in (None, f.visibility),
        )
    )


def _same_subject(new_title: str, old_title: str) -> bool:
    """The smaller significant-token set (2+ tokens) is contained in the larger, unless the
    larger adds only negation words."""
    new, old = set(tokens(new_title)), set(tokens(old_title))
    small, large = (new, old) if len(new) <= len(old) else (old, new)
    if len(small) < 2 or not small <= large:
        return False
    added = large - small
    return not (added and added <= NEGATIONS)
