"""Entities of the semantic layer scored for a search (`knowl search --kind entity|all`).

Entities are few (a semantic layer holds hundreds, not the pages' tens of thousands) and
global, so they are scored when a query runs, from the artifact's entity records, with the
pages' BM25F formula and analyzer (`index.ranking`, `index.fields`); the Whoosh index holds
pages only. Each entity is a document of two fields:

- `names`: its dotted name split on `.`, `_` and camelCase, and its `label`, weighted as a
  page's names (the `title` boost recorded in the artifact) and, as they, by the share of
  their length the query's terms cover;
- `description`: its description, weighted as a page's summary (the `summary` boost).

A query equal to one of an entity's names (its full name, its member, the last part of a
source's name, or its label; `name_key`, so case and accents aside) puts it first, as a
page's name does. The statistics (`docs`, `df`, average lengths) are those of every entity:
entities belong to no user. docs/reading.md gives the same rules (the site's search
implements them too); `reader.mixed` makes hits of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from knowl_build.index.fields import _TOKEN, _stem, name_key
from knowl_build.index.query import MAX_EXPANSIONS, has_phrase
from knowl_build.index.ranking import K1, B, idf

if TYPE_CHECKING:
    from knowl_build.artifacts.schema import Entity
    from knowl_build.index.query import Query

# A lower-case letter or digit followed by a capital, or a capital followed by a capital and a
# lower-case letter: where camelCase (`totalRevenue`, `HTTPServer`) joins two words.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
FIELDS = ("names", "description")
# The page field whose boost (recorded in the artifact) each entity field takes.
BOOST_OF = {"names": "title", "description": "summary"}


def split_camel(text: str) -> str:
    # Text without a capital (most names) has no camelCase to split: the pattern is not run.
    return text if text.islower() else _CAMEL.sub(" ", text)


def analyse(text: str) -> list[str]:
    """An entity field's terms: camelCase split, then the pages' analyzer (runs of letters
    and digits, lowercased, English-stemmed), duplicates kept (they are frequencies)."""
    return [_stem(token.lower()) for token in _TOKEN.findall(split_camel(text))]


def _terms(text: str) -> tuple[str, ...]:
    return tuple(analyse(text))


def _counted(terms: Iterable[str]) -> dict[str, int]:
    """Term -> its frequency, in the order the terms first occur."""
    counts: dict[str, int] = {}
    for term in terms:
        counts[term] = counts.get(term, 0) + 1
    return counts


def label_of(entity: Entity) -> str:
    label = entity.definition.get("label")
    return label if isinstance(label, str) else ""


def description_of(entity: Entity) -> str:
    description = entity.definition.get("description")
    return description if isinstance(description, str) else ""


def names_of(entity: Entity, key: Callable[[str], str] = name_key) -> frozenset[str]:
    """The `name_key`s (`key` computes them) a query equal to which puts the entity first."""
    last = entity.member or entity.name.rpartition(".")[2]
    found = {entity.name, last, split_camel(last), label_of(entity)}
    return frozenset(name for name in map(key, found) if name)


class Ranked(NamedTuple):
    """An entity as search analyses it."""

    name: str
    entity: Entity
    freqs: tuple[dict[str, int], dict[str, int]]  # per field: term -> frequency
    lengths: tuple[int, int]
    names: frozenset[str]

    @property
    def texts(self) -> tuple[str, str, str]:
        """For phrases: the names (camelCase split), the label, the description. Only the
        entities a phrase query scores need them, so they are made when asked for."""
        name = split_camel(self.name.replace(".", " "))
        return (name, label_of(self.entity), description_of(self.entity))


class EntityIndex:
    """The entities of one artifact, analysed once per opened artifact."""

    def __init__(self, entities: Mapping[str, Entity]) -> None:
        # The entities share most of their texts (a source's name is a part of each of its
        # members', a member's name or a label recurs across sources): each distinct one is
        # analysed, and made a `name_key`, once.
        terms_of = cache(_terms)
        key_of = cache(name_key)
        self.docs: list[Ranked] = []
        # Per field: term -> the numbers of the entities holding it, ascending.
        self.postings: tuple[dict[str, list[int]], ...] = tuple({} for _ in FIELDS)
        for number, name in enumerate(sorted(entities)):
            entity = entities[name]
            # The names field, f"{name} {label}", analysed by parts: no word (nor camelCase
            # join) runs across a dot.
            parts = (*name.split("."), label_of(entity))
            terms = (
                [term for part in parts for term in terms_of(part)],
                terms_of(description_of(entity)),
            )
            freqs = (_counted(terms[0]), _counted(terms[1]))
            lengths = (len(terms[0]), len(terms[1]))
            self.docs.append(Ranked(name, entity, freqs, lengths, names_of(entity, key_of)))
            for i, counts in enumerate(freqs):
                for term in counts:
                    self.postings[i].setdefault(term, []).append(number)
        count = len(self.docs) or 1
        self.avg = tuple(
            (sum(doc.lengths[i] for doc in self.docs) / count) or 1.0 for i in range(len(FIELDS))
        )
        self.df = tuple({t: len(ns) for t, ns in field.items()} for field in self.postings)

    def scores(self, terms: list[str], boosts: Mapping[str, float]) -> dict[int, float]:
        """Entity number -> BM25F score of the terms: the description's, plus the names'
        times the share of the names' length the terms cover (as a page's names count)."""
        found: dict[int, float] = {}
        names: dict[int, float] = {}
        covered: dict[int, float] = {}
        docs = max(len(self.docs), 1)
        for term in terms:
            for i, field in enumerate(FIELDS):
                df = self.df[i].get(term, 0)
                if not df:
                    continue
                weight = boosts.get(BOOST_OF[field], 1.0) * idf(docs, df) * (K1 + 1)
                into = names if i == 0 else found
                for number in self.postings[i][term]:
                    doc = self.docs[number]
                    tf = doc.freqs[i][term]
                    norm = K1 * (1 - B + B * doc.lengths[i] / self.avg[i])
                    into[number] = into.get(number, 0.0) + weight * tf / (tf + norm)
                    if i == 0:
                        covered[number] = covered.get(number, 0.0) + tf / max(doc.lengths[0], 1)
        for number, score in names.items():
            found[number] = found.get(number, 0.0) + score * min(1.0, covered[number])
        return found

    def holding(self, term: str) -> set[int]:
        return {n for field in self.postings for n in field.get(term, ())}

    def expand(self, prefix: str) -> list[str]:
        """A prefix's terms as `index.query.expand` chooses them: the terms beginning with it
        and its own stem, in most entities first (ties by term), at most MAX_EXPANSIONS."""
        own = _stem(prefix)
        vocabulary = {term for df in self.df for term in df}
        candidates = [t for t in vocabulary if t.startswith(prefix) or t == own]
        counted = sorted(candidates, key=lambda t: (-len(self.holding(t)), t))
        return counted[:MAX_EXPANSIONS]

    def rank(self, query: Query, boosts: Mapping[str, float]) -> list[tuple[Ranked, float, bool]]:
        """The entities matching the query, best first: named as the query's words first, then
        by score, then by name. Words and prefixes are OR-ed; every phrase must appear in the
        names, the label or the description; an excluded word leaves an entity out."""
        scores = self.scores(query.scored, boosts)
        for prefix in query.prefixes:
            best: dict[int, float] = {}
            for term in self.expand(prefix):
                for number, score in self.scores([term], boosts).items():
                    best[number] = max(best.get(number, 0.0), score)
            for number, score in best.items():
                scores[number] = scores.get(number, 0.0) + score
        name = name_key(" ".join(query.named))
        named = {n for n, doc in enumerate(self.docs) if name and name in doc.names}
        for number in named:
            scores.setdefault(number, 0.0)
        for phrase in query.phrases:
            scores = {n: s for n, s in scores.items() if has_phrase(self.docs[n].texts, phrase)}
        for term in query.excluded:
            for number in self.holding(term):
                scores.pop(number, None)
        ranked = sorted(
            scores.items(), key=lambda ns: (ns[0] not in named, -ns[1], self.docs[ns[0]].name)
        )
        return [(self.docs[n], score, n in named) for n, score in ranked if math.isfinite(score)]
