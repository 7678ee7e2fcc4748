"""The index's field and file names, and how a query's text becomes terms, without Whoosh's
schema: the reader needs no more (start-up time of `knowl search`). The schema and the
analyzer the index is written with are in `analysis`; a test holds the two to the same
terms."""

from __future__ import annotations

import re
from functools import lru_cache

from whoosh.lang.porter import stem

TEXT_FIELDS = ("title", "summary", "tags", "body")
# Every field of the schema (`analysis.schema`), the text fields and the stored ids.
SCHEMA_FIELDS = frozenset(
    {"key", "page_id", "scope", "status", "category", "usage_mode", "visibility", *TEXT_FIELDS}
)
STATS_FILE = "stats.json"
DOCS_FILE = "docs.json"
INDEX_NAME = "MAIN"
# Runs of letters and digits (so `total_revenue` gives `total` and `revenue`).
TOKEN = r"[^\W_]+"
_TOKEN = re.compile(TOKEN)
_stem = lru_cache(maxsize=50000)(stem)


def query_terms(text: str) -> list[str]:
    """The query's terms, analysed like the index (tokens lowercased, English-stemmed, as
    `analysis.analyzer` does); duplicates removed, order kept."""
    seen: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        seen.setdefault(_stem(match.group(0).lower()), None)
    return list(seen)
