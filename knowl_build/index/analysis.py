"""The index's fields, their analyzer and the file names of an index folder."""

from __future__ import annotations

from whoosh import fields
from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter
from whoosh.analysis.analyzers import Analyzer

TEXT_FIELDS = ("title", "summary", "tags", "body")
STATS_FILE = "stats.json"
DOCS_FILE = "docs.json"
INDEX_NAME = "MAIN"


def analyzer() -> Analyzer:
    """Runs of letters and digits (so `total_revenue` gives `total` and `revenue`),
    lowercased, English-stemmed; the same in the index and in queries."""
    return RegexTokenizer(r"[^\W_]+") | LowercaseFilter() | StemFilter()


def schema() -> fields.Schema:
    text = analyzer()
    return fields.Schema(
        key=fields.ID(stored=True, unique=True),
        page_id=fields.ID(stored=True),
        scope=fields.ID(stored=True),
        status=fields.ID(stored=True),
        category=fields.ID(stored=True),
        usage_mode=fields.ID(stored=True),
        visibility=fields.ID(stored=True),
        title=fields.TEXT(analyzer=text),
        summary=fields.TEXT(analyzer=text),
        tags=fields.TEXT(analyzer=text),
        body=fields.TEXT(analyzer=text),
    )


def query_terms(text: str) -> list[str]:
    """The query's terms, analysed like the index (duplicates removed, order kept)."""
    seen: dict[str, None] = {}
    for token in analyzer()(text):
        seen.setdefault(token.text, None)
    return list(seen)
