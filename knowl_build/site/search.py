"""The site's offline search: the artifact's index, exported as shards a browser loads on demand.

`knowl search` ranks with BM25F over the Whoosh index of the artifact (index/ranking.py). The
site ranks the same way, in the browser, from the same postings: this module reads the index's
terms (already analysed: runs of letters and digits, lowercased, Porter-stemmed), their
frequencies and the (stored, quantised) field lengths, and writes them under `<site>/search/`:

    search/meta.json            what a query needs first (a few kB at 10,000 pages): the
                                statistics, the boosts, and the names of every shard and chunk
    search/terms/<hash>.bin     one shard of the terms, or one large term's own file (the
                                shard names it): {term: [[df per field], postings per
                                field]}, the postings in bytes after the JSON (shards.py)
    search/docs/<hash>.json     one chunk of DOCS_PER_CHUNK results: the names of their files
    search/results/<hash>.json  one result: [href, title, summary, freshness, drift, its text
                                by section (`sections`), from which its passage is picked]
    search/entities/<hash>.json the entities of the semantic layer, analysed as
                                reader/entity_search.py analyses them (`entity_rows`)

A term lives in shard `fnv1a32(term) mod len(shards)`, or, when it has more than LARGE
postings, in a file of its own that this shard names (so a shard stays small, and a query
for a common word fetches that word's postings and a small shard, not its neighbours'); assets/search.js analyses the query as
index/analysis.py does (the same tokens and the same Porter stemmer, checked word for word
against Whoosh's by the browser tests), fetches only the shards of its terms (without English stop words, as `fields.search_terms`),
adds up `boost * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_length))` field by
field and term by term, the names and headings by what they cover, as index/ranking.py does, and fetches the chunks of the hits it shows, then
the files of those hits, from whose text it picks the passage as reader/passages.py does. The
statistics (`doc_count`, `df`, `avg_length`) are those of the global pages, as `knowl search`
computes them for a caller without a user; the results are the active pages (its default
`--status active`), best first, ties by page id: the same order as `knowl search`.

Entities are searched too, as `knowl search` (its default `--kind all`) does: search.js scores
them with the same BM25F over their names and descriptions and merges them with the pages by
rank (reader/mixed.py: pages, entities, and the pages binding an entity found, by reciprocal
rank), from `entities/<hash>.json` (the statistics are those of every entity, as there).

Only global pages are written; a term found in no page written is left out, so that no word of
a user's page reaches the site. Shards, chunks and results are named by their content: a
browser may cache them for ever, and a rebuild rewrites only those whose content changed (and
meta.json).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import Any

from knowl_build.artifacts import memo
from knowl_build.artifacts.schema import CatalogEntry, PageRecord
from knowl_build.index.analysis import NAMES_FIELD, TEXT_FIELDS, query_terms
from knowl_build.index.postings import deleted_docs, live_mask, live_postings
from knowl_build.index.ranking import K1, B
from knowl_build.index.storage import open_index, reading
from knowl_build.reader.entity_search import BOOST_OF, FIELDS, EntityIndex
from knowl_build.reader.passages import anchors
from knowl_build.reader.view import CAVEAT, GLOBAL, ArtifactView, visible
from knowl_build.site import urls
from knowl_build.site.datafiles import Folder, Written, digest, encode
from knowl_build.site.shards import NAMED, pack_file, read_file, varint

FOLDER = "search"
META = "meta.json"
TERMS, DOCS, RESULTS, ENTITIES = "terms", "docs", "results", "entities"
FORMAT = 3
DOCS_PER_CHUNK = 32
# About this many bytes per shard (a term's name and entry, about 30 bytes, and two bytes a
# posting); the number of shards is a power of two, so that it changes only when the base
# doubles or halves. A term with more than LARGE postings has a file of its own, which its
# shard names: a query fetches no other term's postings beside it.
BYTES_PER_SHARD = 2048
LARGE = 128
MAX_SHARDS = 4096
SUMMARY_CHARS = 240


@dataclass(frozen=True, slots=True)
class _Doc:
    href: str
    entry: CatalogEntry


@dataclass
class _Postings:
    """One term's document frequency per field (over every global page, as `knowl search`
    counts it) and its postings per field (of the pages written only)."""

    df: list[int]
    postings: list[list[int | float]]


def fnv1a32(text: str) -> int:
    """FNV-1a over the UTF-8 bytes, 32 bits: the shard of a term (search.js computes it too)."""
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def shard_count(size: int) -> int:
    """The number of shards for about `size` bytes of terms."""
    count = 1
    while count < MAX_SHARDS and count * BYTES_PER_SHARD < size:
        count *= 2
    return count


def summary(text: str) -> str:
    """A result's summary, cut at a word near SUMMARY_CHARS."""
    text = " ".join(text.split())
    if len(text) <= SUMMARY_CHARS:
        return text
    cut = text.rfind(" ", 0, SUMMARY_CHARS)
    return text[: cut if cut > SUMMARY_CHARS // 2 else SUMMARY_CHARS].rstrip(" ,;:.") + "…"


def sections(record: PageRecord) -> list[list[str]]:
    """The page's lines as reader/passages.py reads them for a passage, by section: the first
    item holds the lines before the first heading (["", "", line, ...]), each other one a
    heading ([heading, anchor, line, ...]: its heading is its first row, as there). Blank lines
    are left out and the others stripped: the passage search.js picks is the same."""
    first = record.body_line if isinstance(record.body_line, int) else 1
    lines = record.raw_body.splitlines()
    rendered = record.body.splitlines()
    if len(rendered) == len(lines):
        lines = rendered
    headings = {h.line - first: n for n, h in enumerate(record.headings)}
    ids = anchors(record) if headings else []
    out: list[list[str]] = [["", ""]]
    for number, raw in enumerate(lines):
        at = headings.get(number)
        if at is not None:
            out.append([record.headings[at].text, ids[at]])
        elif raw.strip():
            out[-1].append(raw.strip())
    return out


def _gaps_of(numbers: list[int]) -> list[int]:
    """Ascending numbers as the gaps between them (the first from 0)."""
    return [b - a for a, b in zip([0, *numbers], numbers, strict=False)]


def _varints64(numbers: list[int]) -> str:
    """Numbers as unsigned LEB128 varints, in base64 (a list of gaps in a third of the JSON)."""
    out = bytearray()
    for number in numbers:
        varint(out, number)
    return base64.b64encode(bytes(out)).decode("ascii")


def _terms(freqs: dict[str, int]) -> list[str]:
    """A field's terms, each as often as it occurs, in order: its frequencies and its length."""
    return [term for term in sorted(freqs) for _ in range(freqs[term])]


def entity_rows(view: ArtifactView, docs: list[_Doc]) -> dict[str, Any]:
    """The entities as search.js ranks them: the boosts of their two fields and, for each entity
    in name order, [name, kind, link ("" for `entities/<name>.html`), label, description (cut
    as a summary), the `name_key`s that put it first, the terms of each field (each as often
    as it occurs), the documents (numbers of `docs`) binding it that are not caveats (gaps, as
    base64 varints)]: reader/entity_search.py's analysis, done here once."""
    index = EntityIndex(view.entities)
    bound: dict[str, list[int]] = {}
    for number, doc in enumerate(docs):
        if doc.entry.usage_mode == CAVEAT:
            continue  # a caveat rides along with an answer (reader/mixed.py), it is no hit
        for name in dict.fromkeys(doc.entry.sl_refs):
            bound.setdefault(name, []).append(number)
    rows = []
    for ranked in index.docs:
        entity = ranked.entity
        label = entity.definition.get("label")
        description = entity.definition.get("description")
        href = urls.href(urls.ENTITIES, ranked.name)
        rows.append(
            [
                ranked.name,
                entity.kind,
                "" if href == f"{urls.ENTITIES}/{ranked.name}.html" else href,
                label if isinstance(label, str) else "",
                summary(description) if isinstance(description, str) else "",
                sorted(ranked.names),
                _terms(ranked.freqs[0]),
                _terms(ranked.freqs[1]),
                _varints64(_gaps_of(bound.get(ranked.name, []))),
            ]
        )
    return {"boosts": [view.boosts.get(BOOST_OF[f], 1.0) for f in FIELDS], "entities": rows}


def _safe_href(href: str) -> str:
    """A link relative to the site's root, as the core build makes them (urls.py): never a
    scheme, a host or an absolute path, whatever a page's id holds."""
    head = href.split("/", 1)[0]
    if not href or href.startswith(("/", "\\")) or ":" in head or "\\" in href:
        raise ValueError(f"search: {href!r} is not a link relative to the site's root")
    return href


def documents(pages: Iterable[tuple[str, CatalogEntry]]) -> list[_Doc]:
    """The results: active global pages, numbered by (id, path) so that ties between equal
    scores fall as `knowl search` orders them."""
    found: dict[str, _Doc] = {}
    for href, entry in pages:
        if visible(entry, None) and entry.status == "active":
            found.setdefault(entry.key, _Doc(_safe_href(href), entry))
    return sorted(found.values(), key=lambda d: (d.entry.id, d.entry.key))


@dataclass
class _Export:
    doc_count: int
    length_sums: list[int]
    terms: dict[str, _Postings]
    names: dict[str, list[int]]  # name_key -> the written documents of that name


@contextlib.contextmanager
def _segments(view: ArtifactView) -> Iterator[list[Any]]:
    """The index's segments, read through Whoosh as the build reads them: its storage hands
    Whoosh only files checked by knowl's reader (by the full validation, for files still as
    it decoded them)."""
    folder = view.folder / "index"
    files = memo.validated_files(view.folder)
    expected = (
        None
        if files is None
        else {k.removeprefix("index/"): v for k, v in files.items() if k.startswith("index/")}
    )
    with reading(folder):
        ix = open_index(folder, expected=expected)
        try:
            with ix.reader() as reader:
                yield [leaf for leaf, _offset in reader.leaf_readers()]
        finally:
            ix.storage.close_files()
            ix.close()


def _export(view: ArtifactView, docs: list[_Doc]) -> _Export:
    """The index's postings of global documents, with their statistics; only the documents in
    `docs` get postings (numbered by their position there)."""
    with _segments(view) as leaves:
        return _export_from(leaves, docs)


# A segment's document in `_export_from`: deleted or not global, or global but not written.
HIDDEN, UNWRITTEN = -2, -1


def _walk(leaf: Any, fields: list[str]) -> Iterator[tuple[str, str, list[int], list[float]]]:
    """(field, term, documents, frequencies) of every term of `fields` in one segment, deleted
    documents and all: one walk of its terms table (no lookup of each term again, as
    `live_postings` makes), each term's postings read block by block as there."""
    table = leaf._terms
    formats = {name: leaf.schema[name].format for name in fields if name in leaf.schema}
    for (field, text), info in table.items():
        form = formats.get(field)
        if form is None:
            continue
        matcher = table._codec.postings_reader(table._postfile, info, form, term=(field, text))
        ids: list[int] = []
        weights: list[float] = []
        while not matcher._atend:
            matcher._read_ids()
            matcher._read_weights()
            ids += matcher._ids
            weights += matcher._weights
            matcher._next_block()
        yield field, text.decode("utf-8"), ids, weights


def _triples(numbers: list[int], weights: list[float], lengths: list[int]) -> list[Any]:
    """(number, tf, length) of each posting of a written document (its number, at least 0),
    a whole tf as an int; built by maps and slices, not a Python step per posting (10k pages
    have two million)."""
    if min(numbers) < 0:
        kept = list(map((-1).__lt__, numbers))
        numbers = list(compress(numbers, kept))
        weights = list(compress(weights, kept))
        lengths = list(compress(lengths, kept))
    tfs: list[Any] = list(map(int, weights))
    if tfs != weights:
        tfs = [int(w) if w == int(w) else w for w in weights]
    out: list[Any] = [0] * (3 * len(numbers))
    out[0::3] = numbers
    out[1::3] = tfs
    out[2::3] = lengths
    return out


def _export_from(leaves: list[Any], docs: list[_Doc]) -> _Export:
    number = {doc.entry.key: n for n, doc in enumerate(docs)}
    field_of = {name: i for i, name in enumerate(TEXT_FIELDS)}
    terms: dict[str, _Postings] = {}
    names: dict[str, list[int]] = {}
    doc_count = 0
    sums = [0] * len(TEXT_FIELDS)
    for leaf in leaves:
        size = leaf.doc_count_all()
        mine = [
            d for d, _w in live_postings(leaf, "scope", GLOBAL, live_mask(size, deleted_docs(leaf)))
        ]
        doc_count += len(mine)
        # Per document of the segment: its number among `docs`, and its lengths.
        ours = [HIDDEN] * size
        for d in mine:
            ours[d] = number.get(str(leaf.stored_fields(d)["key"]), UNWRITTEN)
        lengths = []
        for i, name in enumerate(TEXT_FIELDS):
            length = leaf._perdoc.doc_field_length_reader(name, 0)
            lengths.append([int(length(d) or 0) if ours[d] != HIDDEN else 0 for d in range(size)])
            sums[i] += sum(lengths[i])
        for field, term, ids, weights in _walk(leaf, [*TEXT_FIELDS, NAMES_FIELD]):
            numbers = list(map(ours.__getitem__, ids))
            df = len(numbers) - numbers.count(HIDDEN)
            if not df:
                continue
            if field == NAMES_FIELD:  # not in an index written before 2.2
                names.setdefault(term, []).extend(n for n in numbers if n >= 0)
                continue
            i = field_of[field]
            entry = terms.get(term)
            if entry is None:
                entry = terms[term] = _Postings([0] * len(TEXT_FIELDS), [[] for _ in TEXT_FIELDS])
            entry.df[i] += df
            of = lengths[i]
            entry.postings[i] += _triples(numbers, weights, list(map(of.__getitem__, ids)))
    # A term of no written page says nothing about a result, and may come from a page that
    # must not reach the site (a draft, say): only the df of global pages is kept with it.
    kept = {term: p for term, p in terms.items() if any(p.postings)}
    return _Export(doc_count, sums, kept, {k: sorted(v) for k, v in names.items() if v})


def _gaps(postings: list[int | float]) -> list[int | float]:
    """(doc, tf, length) triples in document order, each doc as the gap from the one before
    (a quarter fewer bytes than document numbers at 10,000 pages). A document is in a term's
    postings once: sorting the documents orders the triples."""
    docs, tfs, lengths = postings[0::3], postings[1::3], postings[2::3]
    ordered = sorted(docs)
    if docs != ordered:  # more than one, from a segment in path order, not page id order
        pick = itemgetter(*sorted(range(len(docs)), key=docs.__getitem__))
        docs, tfs, lengths = ordered, list(pick(tfs)), list(pick(lengths))
    out: list[int | float] = [0] * len(postings)
    out[0::3] = [b - a for a, b in zip([0, *docs], docs, strict=False)]
    out[1::3] = tfs
    out[2::3] = lengths
    return out


def _shards(export: _Export) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The terms by shard (`fnv1a32(term) mod` their number) and the large terms apart."""
    small = {t: e for t, e in export.terms.items() if sum(map(len, e.postings)) <= 3 * LARGE}
    size = sum(30 + len(t) + sum(len(p) for p in e.postings) * 2 // 3 for t, e in small.items())
    count = shard_count(size)
    shards: list[dict[str, Any]] = [{} for _ in range(count)]
    large: dict[str, Any] = {}
    for term, entry in export.terms.items():
        value = [entry.df, *(_gaps(p) for p in entry.postings)]
        if term in small:
            shards[fnv1a32(term) % count][term] = value
        else:
            large[term] = value
    for name, numbers in export.names.items():
        # "=" + name: the documents named so, as gaps (search.js ranks them first), in the
        # shard of the name's first term: the shard a query equal to it fetches anyway.
        shards[fnv1a32(query_terms(name)[0]) % count][NAMED + name] = _gaps_of(numbers)
    return shards, large


def _write_terms(folder: Folder, export: _Export, docs: int) -> list[str]:
    """The term files (shards.py's format): each large term's own, then the shards, which
    name them. Returns the shards' names."""
    shards, large = _shards(export)
    for term, value in large.items():
        data = pack_file({term: value}, docs)
        name = digest(data)
        folder.put(f"{TERMS}/{name}.bin", data)
        shards[fnv1a32(term) % len(shards)][term] = name
    names = []
    for shard in shards:
        data = pack_file(shard, docs)
        name = digest(data)
        folder.put(f"{TERMS}/{name}.bin", data)
        names.append(name)
    return names


def lookup(folder: Path, meta: dict[str, Any], key: str, term: str | None = None) -> Any:
    """`key`'s entry in the term files under `folder` (`search/`), decoded as `read_file`
    gives it (None: no such key), found as search.js finds it: in the shard of `term` (by
    default `key` itself), then in the file of its own that shard names; and the files read."""
    shards = meta["shards"]
    path = folder / TERMS / f"{shards[fnv1a32(term or key) % len(shards)]}.bin"
    paths = [path]
    value = read_file(path.read_bytes(), meta["docs"]).get(key)
    if isinstance(value, str):
        paths.append(folder / TERMS / f"{value}.bin")
        value = read_file(paths[-1].read_bytes(), meta["docs"]).get(key)
    return value, paths


def write(
    view: ArtifactView,
    out_dir: Path,
    pages: list[tuple[str, CatalogEntry]],
    records: Mapping[str, PageRecord] | None = None,
) -> Written:
    """Write `<out_dir>/search/` for `pages` ((href relative to the site's root, entry) pairs:
    the global pages of the site; any other is ignored). `records` holds their records by key
    where the caller has decoded them already (the core build has: decoding 10k records again
    takes about a second); the others are read from the artifact."""
    decoded = records or {}
    docs = documents(pages)
    export = _export(view, docs)
    folder = Folder(out_dir / FOLDER, out_dir)

    shard_names = _write_terms(folder, export, len(docs))

    results = []
    for d in docs:
        row = [
            d.href,
            d.entry.title,
            summary(d.entry.summary),
            d.entry.freshness,
            d.entry.drift_flag,
            sections(decoded.get(d.entry.key) or view.record(d.entry)),
        ]
        data = encode(row)
        name = digest(data)
        folder.put(f"{RESULTS}/{name}.json", data)
        results.append(name)

    chunk_names = []
    for start in range(0, len(docs), DOCS_PER_CHUNK):
        data = encode(results[start : start + DOCS_PER_CHUNK])
        name = digest(data)
        folder.put(f"{DOCS}/{name}.json", data)
        chunk_names.append(name)

    entities = None
    if view.entities:
        data = encode(entity_rows(view, docs))
        entities = digest(data)
        folder.put(f"{ENTITIES}/{entities}.json", data)

    n = export.doc_count
    boosts = view.boosts
    meta = {
        "format": FORMAT,
        "fields": list(TEXT_FIELDS),
        "boosts": [boosts.get(name, 1.0) for name in TEXT_FIELDS],
        "k1": K1,
        "b": B,
        # As index/ranking.py's view of the global scope: an empty field averages 1.
        "doc_count": n,
        "avg_lengths": [(s / n if n else 0.0) or 1.0 for s in export.length_sums],
        "docs": len(docs),
        "chunk": DOCS_PER_CHUNK,
        "chunks": chunk_names,
        "shards": shard_names,
        "entities": entities,
    }
    # meta.json last: until it is replaced, it names only files that still exist.
    folder.put(META, encode(meta) + b"\n")
    return folder.prune([TERMS, DOCS, RESULTS, ENTITIES])
