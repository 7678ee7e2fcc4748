"""The index's fields, their analyzer and the file names of an index folder."""

from __future__ import annotations

from whoosh import fields
from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter
from whoosh.analysis.analyzers import Analyzer

from knowl_build.index.fields import (
    DOCS_FILE,
    INDEX_NAME,
    NAMES_FIELD,
    STATS_FILE,
    TEXT_FIELDS,
    TOKEN,
    query_terms,
)

__all__ = [
    "DOCS_FILE",
    "INDEX_NAME",
    "NAMES_FIELD",
    "STATS_FILE",
    "TEXT_FIELDS",
    "analyzer",
    "query_terms",
    "schema",
]


def analyzer() -> Analyzer:
    """Runs of letters and digits (so `total_revenue` gives `total` and `revenue`),
    lowercased, English-stemmed; the same in the index and in queries."""
    return RegexTokenizer(TOKEN) | LowercaseFilter() | StemFilter()


def schema() -> fields.Schema:
    # Frequencies, not positions: no query reads positions (no phrases), and writing them
    # cost the index a third of its size and of its writing time.
    text = analyzer()
    return fields.Schema(
        key=fields.ID(stored=True, unique=True),
        page_id=fields.ID(stored=True),
        scope=fields.ID(stored=True),
        status=fields.ID(stored=True),
        category=fields.ID(stored=True),
        usage_mode=fields.ID(stored=True),
        visibility=fields.ID(stored=True),
        title=fields.TEXT(analyzer=text, phrase=False),
        summary=fields.TEXT(analyzer=text, phrase=False),
        tags=fields.TEXT(analyzer=text, phrase=False),
        body=fields.TEXT(analyzer=text, phrase=False),
        headings=fields.TEXT(analyzer=text, phrase=False),
        # One term per name (`name_key`s, comma-separated: a key holds no comma), unscored.
        **{NAMES_FIELD: fields.KEYWORD(commas=True, scorable=False)},
    )
