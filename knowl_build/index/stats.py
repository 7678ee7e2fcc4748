"""Collection statistics: live documents and summed field lengths, overall and per scope."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from knowl_build.index.fields import STATS_FILE, TEXT_FIELDS
from knowl_build.index.postings import deleted_docs, live_mask, live_postings
from knowl_build.index.segments import LENGTH_OF_BYTE, Segment, int_in
from knowl_build.index.unpickler import BadIndex


def length_sums(rows: list[list[int]]) -> dict[str, Any]:
    sums = [sum(column) for column in zip(*rows, strict=True)] if rows else [0] * len(TEXT_FIELDS)
    return {"doc_count": len(rows), "length_sums": dict(zip(TEXT_FIELDS, sums, strict=True))}


def collection_stats(reader: Any) -> dict[str, Any]:
    """`index/stats.json`: the live documents' count and summed (stored) field lengths, and
    the same per scope (`scopes`, added in 1.x): a reader ranks with the statistics of the
    scopes its caller may see, so that no page of another user changes a score (SPEC 6.2)."""
    rows: dict[str, list[list[int]]] = {}
    everything: list[list[int]] = []
    for leaf, _offset in reader.leaf_readers():
        deleted = deleted_docs(leaf)
        live = live_mask(leaf.doc_count_all(), deleted)
        scope_of: dict[int, str] = {}
        for scope in leaf.field_terms("scope"):
            for doc, _weight in live_postings(leaf, "scope", scope, live):
                if scope_of.setdefault(doc, scope) != scope:
                    raise BadIndex(f"segment {leaf.segment().segid}: a document in two scopes")
        lengths = [leaf._perdoc.doc_field_length_reader(name, 0) for name in TEXT_FIELDS]
        for docnum in range(leaf.doc_count_all()):
            if docnum in deleted:
                continue
            if docnum not in scope_of:
                raise BadIndex(f"segment {leaf.segment().segid}: a document without a scope")
            row = [length(docnum) or 0 for length in lengths]
            everything.append(row)
            rows.setdefault(scope_of[docnum], []).append(row)
    stats = length_sums(everything)
    stats["scopes"] = {scope: length_sums(rows[scope]) for scope in sorted(rows)}
    return stats


def segment_stats(segments: list[Segment]) -> dict[str, Any]:
    """`collection_stats` from the index as `segments` reads it (no Whoosh reader: a build
    writing one page's change does not walk every document through Whoosh's columns)."""
    rows: dict[str, list[list[int]]] = {}
    everything: list[list[int]] = []
    for segment in segments:
        size, deleted = segment.doc_count, segment.deleted
        scope_of: dict[int, str] = {}
        for scope in segment.terms_of("scope"):
            for ids, _weights in segment.blocks("scope", scope):
                for doc in ids:
                    if doc not in deleted and scope_of.setdefault(doc, scope) != scope:
                        raise BadIndex(f"segment {segment.facts.segid}: a document in two scopes")
        lengths = [segment.length_bytes(name) for name in TEXT_FIELDS]
        for docnum in range(size):
            if docnum in deleted:
                continue
            if docnum not in scope_of:
                raise BadIndex(f"segment {segment.facts.segid}: a document without a scope")
            row = [LENGTH_OF_BYTE[length[docnum]] for length in lengths]
            everything.append(row)
            rows.setdefault(scope_of[docnum], []).append(row)
    stats = length_sums(everything)
    stats["scopes"] = {scope: length_sums(rows[scope]) for scope in sorted(rows)}
    return stats


MAX_COUNT = 1 << 53
# Text fields added after 2.0 (schema 2.2: `headings`): an index written before has none, its
# stats.json no sum of their lengths (0: they match nothing).
LATER_FIELDS = frozenset({"headings"})


def is_count(entry: object) -> bool:
    """An entry of stats.json: `{"doc_count", "length_sums"}` with whole numbers."""
    if type(entry) is not dict or not int_in(entry.get("doc_count"), 0, MAX_COUNT):
        return False
    sums = entry.get("length_sums")
    return type(sums) is dict and all(
        int_in(sums.get(f, 0 if f in LATER_FIELDS else None), 0, MAX_COUNT) for f in TEXT_FIELDS
    )


def summed(entries: Iterable[dict[str, Any]]) -> tuple[int, ...]:
    """The document count and the length sums of `entries`, added up."""
    rows = [(e["doc_count"], *(e["length_sums"].get(f, 0) for f in TEXT_FIELDS)) for e in entries]
    return (
        tuple(sum(column) for column in zip(*rows, strict=True))
        if rows
        else (0,) * (1 + len(TEXT_FIELDS))
    )


def load_stats(folder: Path) -> dict[str, Any]:
    """`index/stats.json`, checked: whole numbers, and per-scope entries (when present, as
    written since 1.x) that add up to the totals. BadIndex otherwise."""
    try:
        stats = json.loads((folder / STATS_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        raise BadIndex(f"{STATS_FILE} is unreadable") from None
    scopes = stats.get("scopes", {}) if type(stats) is dict else None
    if not (
        is_count(stats)
        and type(scopes) is dict
        and all(type(name) is str and is_count(entry) for name, entry in scopes.items())
    ):
        raise BadIndex(f"{STATS_FILE} is malformed")
    if "scopes" in stats and summed(scopes.values()) != summed([stats]):
        raise BadIndex(f"{STATS_FILE}: the scopes' statistics do not add up to the totals")
    return stats  # type: ignore[no-any-return]


def check_stats(stats: dict[str, Any], actual: dict[str, Any]) -> None:
    """stats.json holds what the build computes from the index it describes."""
    if summed([stats]) != summed([actual]):
        raise BadIndex(f"{STATS_FILE} disagrees with the index's documents")
    if "scopes" in stats and {k: summed([v]) for k, v in stats["scopes"].items()} != {
        k: summed([v]) for k, v in actual["scopes"].items()
    }:
        raise BadIndex(f"{STATS_FILE} disagrees with the index's scopes")
