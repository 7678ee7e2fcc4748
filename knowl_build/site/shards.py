"""The binary form of the site's term files (search/terms/*.bin), which search.js decodes.

A file is the length of its JSON part (4 bytes, little-endian), the JSON, then the postings.
The JSON is `[lengths, terms]`: the field lengths its postings hold, the most frequent first
(ties by length), and {term: entry}. An entry is `[[df per field], postings per field]`, the
postings of a field being one of

    []                    none (of the pages written)
    [offset, count]       at `offset` of the postings part, `count` document gaps as unsigned
                          LEB128 varints, then `count` varints `(tf - 1) * len(lengths) + place`
                          (the place of its length in `lengths`: one byte a posting, mostly)
    [offset, count, 1]    the same, but the documents as a bitmap of ceil(docs / 8) bytes (bit
                          `d % 8` of byte `d // 8`): fewer bytes than gaps for a term in more
                          than one document in eight
    [[gap, tf, length, ...]]   in the JSON, for a field whose frequencies are not all whole

or, in a shard, the name of the file of its own that holds a large term (a string). A name's
entry ("=" + name) is the list of its documents, as gaps. `read_file` gives back what
`pack_file` was given, the postings as (gap, tf, length) triples.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from knowl_build.site.datafiles import encode

NAMED = "="

Entry = list[Any]  # [[df per field], [gap, tf, length, ...] per field]


def varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _varints(out: bytearray, values: list[int]) -> None:
    if not values or max(values) < 0x80:
        out += bytes(values)  # each its one byte (the common case, at C speed)
        return
    for value in values:
        varint(out, value)


def length_table(terms: dict[str, Any]) -> list[int]:
    """Every field length the entries' postings hold, the most frequent first (ties by length)."""
    counts: Counter[int] = Counter()
    for term, value in terms.items():
        if term.startswith(NAMED) or isinstance(value, str):
            continue
        for postings in value[1:]:
            if float not in map(type, postings[1::3]):
                counts.update(postings[2::3])
    return sorted(counts, key=lambda n: (-counts[n], n))


def _pack_field(blob: bytearray, postings: list[Any], place: dict[int, int], docs: int) -> Any:
    """One field's postings into `blob`: their entry in the JSON (see the module's docstring)."""
    if not postings:
        return []
    if float in map(type, postings[1::3]):  # gaps and lengths are whole, a tf may not be
        return [postings]
    start, count = len(blob), len(postings) // 3
    gaps = postings[0::3]
    dense = count * 8 > docs
    if dense:
        bits = bytearray((docs + 7) // 8)
        doc = 0
        for gap in gaps:
            doc += gap
            bits[doc >> 3] |= 1 << (doc & 7)
        blob += bits
    else:
        _varints(blob, gaps)
    size = len(place)
    _varints(
        blob,
        [(tf - 1) * size + place[n] for tf, n in zip(postings[1::3], postings[2::3], strict=True)],
    )
    return [start, count, 1] if dense else [start, count]


def pack_file(terms: dict[str, Any], docs: int) -> bytes:
    """A term file's bytes for `terms` ({term: entry, "=" + name: gaps, term: file name}),
    of a site of `docs` results."""
    lengths = length_table(terms)
    place = {n: i for i, n in enumerate(lengths)}
    blob = bytearray()
    head: dict[str, Any] = {}
    for term in sorted(terms):
        value = terms[term]
        if term.startswith(NAMED) or isinstance(value, str):
            head[term] = value
            continue
        head[term] = [value[0], *(_pack_field(blob, p, place, docs) for p in value[1:])]
    data = encode([lengths, head])
    return len(data).to_bytes(4, "little") + data + bytes(blob)


class _Reader:
    def __init__(self, blob: bytes, lengths: list[int], docs: int) -> None:
        self.blob, self.lengths, self.docs = blob, lengths, docs
        self.at = 0

    def varint(self) -> int:
        number, shift = 0, 0
        while True:
            byte = self.blob[self.at]
            self.at += 1
            number |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return number

    def field(self, value: list[Any]) -> list[Any]:
        if len(value) < 2:
            return list(value[0]) if value else []
        self.at, count = value[0], value[1]
        if len(value) == 3:
            docs = [
                d
                for d in range((self.docs + 7) // 8 * 8)
                if self.blob[self.at + (d >> 3)] >> (d & 7) & 1
            ]
            gaps = [b - a for a, b in zip([0, *docs], docs, strict=False)]
            self.at += (self.docs + 7) // 8
        else:
            gaps = [self.varint() for _ in range(count)]
        out: list[Any] = []
        size = len(self.lengths)
        for gap in gaps:
            tf, place = divmod(self.varint(), size)
            out += (gap, tf + 1, self.lengths[place])
        return out


def read_file(data: bytes, docs: int) -> dict[str, Any]:
    """`pack_file`'s input again (the tests and the benchmark read term files with it)."""
    size = int.from_bytes(data[:4], "little")
    lengths, head = msgspec.json.decode(data[4 : 4 + size])
    reader = _Reader(data[4 + size :], lengths, docs)
    out: dict[str, Any] = {}
    for term, value in head.items():
        if term.startswith(NAMED) or isinstance(value, str):
            out[term] = value
        else:
            out[term] = [value[0], *(reader.field(f) for f in value[1:])]
    return out
