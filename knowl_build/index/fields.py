"""The index's field and file names, and how a query's text becomes terms, without Whoosh's
schema: the reader needs no more (start-up time of `knowl search`). The schema and the
analyzer the index is written with are in `analysis`; a test holds the two to the same
terms."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from whoosh.lang.porter import stem

# `title` holds the page's names (its title, file name and aliases), `headings` its headings.
TEXT_FIELDS = ("title", "summary", "tags", "body", "headings")
# The page's names as whole keys (`name_key`): a query equal to one puts the page first.
NAMES_FIELD = "names"
# Every field of the schema (`analysis.schema`), the text fields and the stored ids.
SCHEMA_FIELDS = frozenset(
    {
        "key",
        "page_id",
        "scope",
        "status",
        "category",
        "usage_mode",
        "visibility",
        NAMES_FIELD,
        *TEXT_FIELDS,
    }
)
STATS_FILE = "stats.json"
DOCS_FILE = "docs.json"
INDEX_NAME = "MAIN"
# Runs of letters and digits (so `total_revenue` gives `total` and `revenue`).
TOKEN = r"[^\W_]+"
_TOKEN = re.compile(TOKEN)
_stem = lru_cache(maxsize=50000)(stem)


# Lucene's English stop words (its StandardAnalyzer's set, which bm25s uses too), left out
# of a query when MIN_CONTENT_WORDS other words remain: in a question, "in the same
# document" matched the names of pages titled "... in the ... document" by chance; alone
# with one word ("the revenue") they stay, as typed.
STOP_WORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into"),
        *("is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then"),
        *("there", "these", "they", "this", "to", "was", "will", "with"),
    }
)
MIN_CONTENT_WORDS = 2


def query_terms(text: str) -> list[str]:
    """The query's terms, analysed like the index (tokens lowercased, English-stemmed, as
    `analysis.analyzer` does); duplicates removed, order kept."""
    seen: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        seen.setdefault(_stem(match.group(0).lower()), None)
    return list(seen)


def content_terms(tokens: Iterable[str]) -> list[str]:
    """The terms a query is scored with, from its tokens as typed: `query_terms`'s, without
    the STOP_WORDS when at least MIN_CONTENT_WORDS distinct other terms are left.
    search.js computes them too."""
    lowered = [token.lower() for token in tokens]
    kept = [token for token in lowered if token not in STOP_WORDS]
    if len({_stem(token) for token in kept}) < MIN_CONTENT_WORDS:
        kept = lowered
    return list(dict.fromkeys(_stem(token) for token in kept))


def search_terms(text: str) -> list[str]:
    """The terms a plain query is scored with (`content_terms` of its tokens)."""
    return content_terms(_TOKEN.findall(text))


def name_key(text: str) -> str:
    """A name as a query equal to it is compared: accents dropped (NFKD without its marks),
    lowercased, its runs of letters and digits joined by one space (`Total_Revenue`,
    `total revenue` and `Tôtal-Revenue` are one name). search.js computes it too."""
    if text.isascii():  # NFKD leaves ASCII as it is, and it has no combining mark
        return " ".join(_TOKEN.findall(text.lower()))
    bare = "".join(
        c
        for c in unicodedata.normalize("NFKD", text)
        if not unicodedata.category(c).startswith("M")
    )
    return " ".join(_TOKEN.findall(bare.lower()))
