"""The site's URL layout, in one place (docs/site.md documents it; it is stable):

    index.html                      the home page
    pages/<page>.html               every global page
    entities/<entity>.html          every semantic entity
    tags/<tag>.html                 the pages of one tag
    categories/<category>.html      the pages of one category
    search.html                     offline search; `search.html?q=revenue` shows the results
    stale.html                      the review queue: every page that is not fresh
    graph.html                      the whole reference graph

A name becomes one path segment: percent-encoded with nothing kept but letters, digits and
`-_.~` (so `/`, `..`, `%` and spaces can never leave the folder or collide), and `<page>` is
the page's id, or its path under the scope folder when pages of several folders share the id.
`file_name` is the file on disk; `href` is the link to it, relative to the site's root, which
encodes the file name once more, as a URL must (`a b` -> file `a%20b.html`, link
`a%2520b.html`). A name whose encoding passes 200 characters keeps its first 180 and ends in
`~` and 16 hex digits of its SHA-256 (graph.js hashes it too, with the browser's
SubtleCrypto: over https or on localhost; elsewhere it leaves that neighbourhood undrawn).
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote

from msgspec import UnsetType

from knowl_build.artifacts.schema import CatalogEntry

SAFE = "-_.~"
PAGES, ENTITIES, TAGS, CATEGORIES = "pages", "entities", "tags", "categories"
INDEX, SEARCH, STALE, GRAPH = "index.html", "search.html", "stale.html", "graph.html"


# File systems allow 255 bytes a name; `.html` and `.json` need room. A longer encoding (30
# CJK characters are enough) keeps its start and ends in a hash of the whole name.
MAX_SEGMENT = 200
LONG_KEEP = 180


def segment(name: str) -> str:
    """A name as one safe file name stem."""
    encoded = quote(name, safe=SAFE)
    # `.` and `..` alone would name a folder; no id or entity is only dots, but be sure.
    if set(encoded) <= {"."}:
        return encoded.replace(".", "%2E")
    if len(encoded) > MAX_SEGMENT:
        cut = encoded[:LONG_KEEP]
        escape = cut.rfind("%", len(cut) - 2)  # never split a `%XX`
        if escape != -1:
            cut = cut[:escape]
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{cut}~{digest}"
    return encoded


def page_name(entry: CatalogEntry) -> str:
    """What names a page in its URL: its id, or its path when its id is shared."""
    return entry.id if isinstance(entry.node, UnsetType) else entry.node


def file_name(folder: str, name: str) -> str:
    """The file, relative to the site's root: `pages/revenue.html`."""
    return f"{folder}/{segment(name)}.html"


def href(folder: str, name: str) -> str:
    """The link to `file_name(folder, name)`, relative to the site's root."""
    return f"{folder}/{quote(segment(name), safe=SAFE)}.html"


def page_file(entry: CatalogEntry) -> str:
    return file_name(PAGES, page_name(entry))


def page_href(entry: CatalogEntry) -> str:
    return href(PAGES, page_name(entry))
