"""The live documents of a segment and their postings, as the statistics and ranking count
them."""

from __future__ import annotations

from bisect import bisect_left
from itertools import compress
from operator import itemgetter
from typing import Any


def deleted_docs(leaf: Any) -> frozenset[int]:
    return frozenset(leaf.deleted_docs_set) if leaf.has_deletions() else frozenset()


class Mask:
    """The documents of a segment a caller may see: one byte per document (1: visible), and
    the hidden ones in order, so that a block of postings (whose documents ascend, as the full
    validation checks) is known to hide none with two comparisons. Pages are indexed in path
    order, so each user's pages lie together: most blocks hide none."""

    __slots__ = ("hidden", "mask")

    def __init__(self, size: int, hidden: frozenset[int]) -> None:
        mask = bytearray(b"\x01") * size
        for doc in hidden:
            mask[doc] = 0
        self.mask = bytes(mask)
        self.hidden = sorted(hidden)

    @classmethod
    def of(cls, visible: bytearray) -> Mask | None:
        """The mask whose visible documents are those `visible` marks 1 (the others are 0);
        None when it hides none."""
        if visible.count(1) == len(visible):
            return None
        mask = cls.__new__(cls)
        mask.mask = bytes(visible)
        mask.hidden = [doc for doc, seen in enumerate(visible) if not seen]
        return mask

    def hides(self, first: int, last: int) -> bool:
        """Whether a document from `first` to `last` is hidden."""
        at = bisect_left(self.hidden, first)
        return at < len(self.hidden) and self.hidden[at] <= last


def live_mask(size: int, hidden: frozenset[int]) -> Mask | None:
    """What a caller may see of a segment; None when nothing is hidden."""
    return Mask(size, hidden) if hidden else None


def live_postings(
    leaf: Any, field: str, term: str, visible: Mask | None
) -> list[tuple[int, float]]:
    """A term's (document, frequency) pairs in one segment, read block by block, of the
    documents `visible` lets through (not deleted, in a scope the caller may see; None: all).
    A block whose range of documents holds no hidden one is taken whole; in another, the mask
    is applied by `compress` (no Python step per posting either way). whoosh3 is pinned
    exactly, so these private reader APIs are stable for us."""
    if (field, term) not in leaf:
        return []
    matcher = leaf._terms.matcher(
        field, leaf._text_to_bytes(field, term), leaf.schema[field].format
    )
    pairs: list[tuple[int, float]] = []
    while not matcher._atend:
        matcher._read_ids()
        matcher._read_weights()
        ids = matcher._ids
        block = zip(ids, matcher._weights, strict=False)
        if visible is None or not visible.hides(ids[0], ids[-1]):
            pairs.extend(block)
        elif len(ids) == 1:
            pairs.extend(block if visible.mask[ids[0]] else ())
        else:
            pairs.extend(compress(block, itemgetter(*ids)(visible.mask)))
        matcher._next_block()
    return pairs
