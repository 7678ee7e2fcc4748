"""The query syntax of `knowl search` (and of the MCP tools, which share the reader's search):
words, prefixes (`rev*`), quoted phrases (`"net of discounts"`), exclusions (`-draft`) and
field filters (`tag:finance`), parsed into a `Query`, then scored against the index without
Whoosh (start-up time of `knowl search`).

- Words and prefixes are OR-ed, as plain words always were: a page matches any of them.
  English stop words are left out of the words when two others remain (`fields.content_terms`),
  as for a plain query.
- A prefix is expanded against the term dictionary of every text field. The index holds
  stemmed terms (`revenue` is `revenu`), so a prefix matches the terms beginning with it as
  typed *and* the term that is its own stem (`revenue*` finds `revenu`, the stem of revenue and
  revenues). At most MAX_EXPANSIONS terms, those in most of the caller's visible pages (ties by
  term), so `re*` cannot blow up; a prefix shorter than MIN_PREFIX characters is refused.
  A prefix scores as one word: a page's best-scoring expansion.
- Every quoted phrase must appear, its words in order within one field (title, summary, tags or
  body). The index stores frequencies, not positions, so the pages holding all of a phrase's
  words are ranked and the first PHRASE_DEPTH of them are checked against their stored text
  (by the reader: `Phrases`); a page ranked below them is not found.
- `-word` removes every page holding the word in any text field; a query of exclusions alone
  is refused.
- Field filters are the options of `knowl search`: `tag:`, `category:`, `status:` and
  `usage-mode:`.

Everything is bounded: the query's length, its number of parts, the expansions and the phrase
checks; a query beyond a bound is a one-line UsageError, never a traceback.
"""

from __future__ import annotations

import re
from bisect import insort
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from knowl_build.core.errors import UsageError
from knowl_build.index.fields import _TOKEN, TEXT_FIELDS, _stem, content_terms

if TYPE_CHECKING:
    from knowl_build.index.ranking import Searcher

MAX_QUERY_CHARS = 1_000  # as the MCP tools bound a query
MAX_PARTS = 64  # words, prefixes, phrases and exclusions together
MIN_PREFIX = 2
MAX_EXPANSIONS = 64
# Dictionary terms a prefix may begin, per field and segment, before the most frequent are
# chosen; beyond it the prefix is refused (it would take longer than a search may).
MAX_CANDIDATES = 4_096
MAX_PHRASE_WORDS = 16
PHRASE_DEPTH = 200
MAX_SUGGESTIONS = 3
SUGGESTION_CUTOFF = 70.0  # rapidfuzz's ratio, 0-100
# The query's filters and the `knowl search` options they stand for.
FILTERS = {"tag": "tags", "category": "category", "status": "status", "usage-mode": "usage_mode"}
FILTERS["usage_mode"] = "usage_mode"

# A part: an optional `-`, then a quoted phrase (an unclosed quote runs to the end), a
# `field:value` filter, or a run of anything else up to a space or a quote.
_PART = re.compile(r'(-?)(?:"([^"]*)(?:"|$)|([A-Za-z_-]+):([^\s"]+)|([^\s"]+))')


class Query(NamedTuple):  # not a dataclass: cheaper to import (start-up time)
    """A parsed query: stemmed terms, prefixes as typed (lowercased), phrases as sequences of
    stemmed terms, excluded terms and field filters (option name -> values)."""

    terms: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    phrases: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[str, ...] = ()
    filters: tuple[tuple[str, str], ...] = ()
    words: tuple[str, ...] = ()  # what the query asks for, as typed
    # Its words and phrases' words as typed, without prefixes and exclusions: the name a page
    # (or an entity) must have to rank first, as a plain query equal to its name does.
    named: tuple[str, ...] = ()

    @property
    def plain(self) -> bool:
        """Words only, as before the syntax: scored exactly as they always were."""
        return not (self.prefixes or self.phrases or self.excluded)

    @property
    def scored(self) -> list[str]:
        """The terms scored as words: the words, then each phrase's words."""
        seen = dict.fromkeys(self.terms)
        for phrase in self.phrases:
            seen.update(dict.fromkeys(phrase))
        return list(seen)

    @property
    def empty(self) -> bool:
        return not (self.terms or self.prefixes or self.phrases)

    @property
    def text(self) -> str:
        """The query without its syntax, for the vectors."""
        return " ".join(self.words)


def _stems(text: str) -> list[str]:
    return [_stem(match.group(0).lower()) for match in _TOKEN.finditer(text)]


def _shown(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _check_filter(name: str, value: str) -> None:
    # Imported here: start-up time of `knowl search` (only a filter in the query needs it).
    from knowl_build.core.model import CATEGORIES, STATUSES, USAGE_MODES

    allowed = {
        "category": CATEGORIES,
        "status": (*STATUSES, "all"),
        "usage-mode": USAGE_MODES,
        "usage_mode": USAGE_MODES,
    }.get(name)
    if allowed is not None and value not in allowed:
        raise UsageError(f"'{name}:{_shown(value)}': not one of {', '.join(allowed)}")


class _Parts:
    """What `parse` has read so far, in the order it was typed (dicts as ordered sets)."""

    def __init__(self) -> None:
        self.tokens: list[str] = []  # the words scored, as typed (`content_terms` of them)
        self.prefixes: dict[str, None] = {}
        self.phrases: dict[tuple[str, ...], None] = {}
        self.excluded: dict[str, None] = {}
        self.filters: dict[tuple[str, str], None] = {}
        self.words: list[str] = []
        self.named: list[str] = []

    def phrase(self, minus: str, phrase: str) -> None:
        stems = _stems(phrase)
        if minus and stems:
            raise UsageError(
                f"'-\"{_shown(phrase)}\"': a phrase cannot be excluded; exclude its words"
            )
        if len(stems) > MAX_PHRASE_WORDS:
            raise UsageError(f"a phrase has more than {MAX_PHRASE_WORDS} words")
        tokens = _TOKEN.findall(phrase)
        if len(stems) == 1:
            self.tokens.extend(tokens)
        elif stems:
            self.phrases.setdefault(tuple(stems), None)
        self.words.extend(tokens)
        self.named.extend(tokens)

    def filter(self, minus: str, name: str, value: str) -> None:
        if minus:
            raise UsageError(f"'-{_shown(name)}:': a filter cannot be excluded")
        _check_filter(name.lower(), value)
        self.filters.setdefault((FILTERS[name.lower()], value), None)

    def word(self, minus: str, raw: str) -> None:
        tokens = _TOKEN.findall(raw)
        is_prefix = bool(tokens) and raw.endswith("*") and raw.rstrip("*").endswith(tokens[-1])
        if minus:
            self.excluded.update(dict.fromkeys(_stem(token.lower()) for token in tokens))
            return
        self.words.extend(tokens)
        if is_prefix:
            prefix = tokens[-1].lower()
            if len(prefix) < MIN_PREFIX:
                raise UsageError(
                    f"'{_shown(raw)}': a prefix needs at least {MIN_PREFIX} letters or digits"
                )
            self.prefixes.setdefault(prefix, None)
            tokens = tokens[:-1]
        self.tokens.extend(tokens)
        self.named.extend(tokens)

    def query(self) -> Query:
        terms = tuple(content_terms(self.tokens))
        return Query(
            terms,
            tuple(self.prefixes),
            tuple(self.phrases),
            tuple(t for t in self.excluded if t not in terms),
            tuple(self.filters),
            tuple(self.words),
            tuple(self.named),
        )


def parse(text: str) -> Query:
    """The query's parts (see the module's docstring); a UsageError says why a query cannot
    be searched."""
    if len(text) > MAX_QUERY_CHARS:
        raise UsageError(
            f"the query is {len(text):,} characters long; at most {MAX_QUERY_CHARS:,} are searched"
        )
    parts = _Parts()
    count = 0
    for match in _PART.finditer(text):
        minus, phrase, name, value, word = match.groups()
        if _TOKEN.search(match.group(0)) is None:
            continue  # quotes, stars, dashes and punctuation alone ask for nothing
        count += 1
        if count > MAX_PARTS:
            raise UsageError(f"the query has more than {MAX_PARTS} parts")
        if phrase is not None:
            parts.phrase(minus, phrase)
        elif name is not None and name.lower() in FILTERS:
            parts.filter(minus, name, value)
        else:
            parts.word(minus, word if word is not None else f"{name}:{value}")
    query = parts.query()
    if query.filters and query.empty:
        raise UsageError(
            "the query only filters; say what to search for too (e.g. 'tag:finance revenue')"
        )
    if query.excluded and query.empty:
        raise UsageError(
            "the query only excludes words; say what to search for too (e.g. 'revenue -draft')"
        )
    return query


# --- against the index ------------------------------------------------------------------------


def docs_with(searcher: Searcher, term: str, scopes: Iterable[str] | None) -> set[int]:
    """The documents the caller may see that hold `term` in any text field."""
    # Imported here: start-up time (the parser is imported before the ranking is needed).
    from knowl_build.index.ranking import segment_postings

    view = searcher._view(scopes)
    found: set[int] = set()
    for position, segment in enumerate(searcher.segments):
        offset = searcher.offsets[position]
        for name in TEXT_FIELDS:
            found.update(
                offset + doc
                for doc, _tf in segment_postings(segment, name, term, view.visible[position])
            )
    return found


def _visible_anywhere(searcher: Searcher, term: str, scopes: Iterable[str] | None) -> bool:
    # Imported here: start-up time (the parser is imported before the ranking is needed).
    from knowl_build.index.ranking import segment_postings

    view = searcher._view(scopes)
    return any(
        segment_postings(segment, name, term, view.visible[position])
        for position, segment in enumerate(searcher.segments)
        for name in TEXT_FIELDS
    )


def expand(searcher: Searcher, prefix: str, scopes: Iterable[str] | None) -> list[str]:
    """The prefix's terms: those beginning with it and its own stem, in the most of the
    caller's pages first, at most MAX_EXPANSIONS. Frequencies count the caller's pages only,
    so no other user's page decides which terms a prefix stands for."""
    candidates: set[str] = set()
    own = _stem(prefix)
    for segment in searcher.segments:
        for name in TEXT_FIELDS:
            found = segment.terms_of(name, prefix)
            if len(found) > MAX_CANDIDATES:
                raise UsageError(
                    f"'{_shown(prefix)}*' begins too many words of the index; make it longer"
                )
            candidates.update(found)
            if (name, own) in segment:
                candidates.add(own)
    # Each candidate's count in the term infos (every scope, deleted documents too) bounds
    # what the caller sees of it: candidates are counted in that order until none left can
    # reach the chosen ones, so a broad prefix reads few postings, and the answer is the
    # same as if every candidate were counted.
    bound = {
        term: sum(
            segment.doc_frequency(name, term)
            for segment in searcher.segments
            for name in TEXT_FIELDS
        )
        for term in candidates
    }
    chosen: list[tuple[int, str]] = []  # (-visible documents, term), best first
    for term in sorted(candidates, key=lambda t: (-bound[t], t)):
        if len(chosen) == MAX_EXPANSIONS and bound[term] < -chosen[-1][0]:
            break
        count = len(docs_with(searcher, term, scopes))
        if count:
            insort(chosen, (-count, term))
            del chosen[MAX_EXPANSIONS:]
    return [term for _count, term in chosen]


def scores(
    searcher: Searcher,
    query: Query,
    boosts: Mapping[str, float],
    scopes: Iterable[str] | None,
) -> dict[int, float]:
    """Document -> score for the query's words, prefixes and phrases (phrase words must all be
    there; the phrases themselves are checked by the reader), without its exclusions."""
    scopes = None if scopes is None else frozenset(scopes)
    words = query.scored
    found = searcher.scores(words, boosts, scopes) if words else {}
    for prefix in query.prefixes:
        best: dict[int, float] = {}
        for term in expand(searcher, prefix, scopes):
            for doc, score in searcher.scores([term], boosts, scopes).items():
                if score > best.get(doc, 0.0):
                    best[doc] = score
        for doc in sorted(best):
            found[doc] = found.get(doc, 0.0) + best[doc]
    for phrase in query.phrases:
        holding: set[int] | None = None
        for term in phrase:
            docs = docs_with(searcher, term, scopes)
            holding = docs if holding is None else holding & docs
        found = {doc: score for doc, score in found.items() if holding and doc in holding}
    for term in query.excluded:
        if found:
            for doc in docs_with(searcher, term, scopes):
                found.pop(doc, None)
    return found


def has_phrase(fields: Iterable[str], phrase: tuple[str, ...]) -> bool:
    """Whether the phrase's terms follow each other in one of the texts."""
    size = len(phrase)
    for text in fields:
        stems = _stems(text)
        first = phrase[0]
        for at, term in enumerate(stems):
            if term == first and tuple(stems[at : at + size]) == phrase:
                return True
    return False


def suggestions(
    searcher: Searcher, terms: Iterable[str], scopes: Iterable[str] | None
) -> dict[str, list[str]]:
    """Up to MAX_SUGGESTIONS terms of the index nearest each of `terms` (rapidfuzz's ratio,
    best first, ties by term), each held by a page the caller may see: a term of another
    user's pages alone is never suggested."""
    # rapidfuzz loads only when a query found nothing (start-up time of `knowl search`).
    from rapidfuzz import fuzz, process

    scopes = None if scopes is None else frozenset(scopes)
    vocabulary = sorted(
        {
            term
            for segment in searcher.segments
            for name in TEXT_FIELDS
            for term in segment.terms_of(name)
        }
    )
    found: dict[str, list[str]] = {}
    for term in terms:
        near = process.extract(
            term, vocabulary, scorer=fuzz.ratio, limit=None, score_cutoff=SUGGESTION_CUTOFF
        )
        near.sort(key=lambda choice: (-choice[1], choice[0]))
        picked: list[str] = []
        for choice, _score, _index in near:
            if choice == term or len(choice) < MIN_PREFIX:
                continue
            if _visible_anywhere(searcher, choice, scopes):
                picked.append(choice)
                if len(picked) == MAX_SUGGESTIONS:
                    break
        if picked:
            found[term] = picked
    return found
