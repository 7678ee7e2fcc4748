"""Did-you-mean: the closest name, exactly as `difflib.get_close_matches(name, names, n=1,
cutoff)` picks it, without running difflib on every name, and within a budget per run.

Why the answer is the same. difflib keeps a name x when `SequenceMatcher(None, x,
name).ratio() >= cutoff`, with ratio = 2.0 * M / (len(x) + len(name)), where the M matched
characters form a common subsequence of the two; of the names kept it returns the largest
`(ratio, x)` (heapq.nlargest with n=1 is max() over those tuples: the highest ratio, a tie
going to the greater string). The longest common subsequence L is at least M, so the bound
2.0 * L / T (same T, same arithmetic, so never below difflib's float) is at least the ratio:

1. A ratio >= cutoff needs L >= `least_common(T, cutoff)`, and L <= min(len(x), len(name)),
   so only names within a window of lengths can qualify (about 0.6x to 1.7x at 0.75). The
   index keeps the names grouped by length; the window is found by bisection.
2. In the window, rapidfuzz computes L exactly (its Indel distance is T - 2L, in C++) with
   the largest distance each length allows; the names it drops have bound < cutoff, hence
   ratio < cutoff: difflib would not keep them either.
3. The survivors are taken in decreasing `(bound, x)`; difflib's own ratio (the same
   SequenceMatcher set-up as get_close_matches, autojunk included) is computed for each, and
   the search stops at the first `(bound, x)` below the best `(ratio, x)` found: neither it
   nor any after it can reach that tuple, since ratio <= bound.

What it costs. Choosing the window is a bisection; the Python work of a lookup is one step
per length in the window and per survivor, whatever the number of names. The comparisons in
the window are C++ (~40 ns each, against ~3-20 us for a difflib ratio). The window is
most of a vault whose ids have similar lengths (70% in bench/hints_bench.py), so that part
still grows with the pages. Shared n-grams do not narrow it at this cutoff: a 20-character
id may lose 5 characters and gain 5, which leaves as few as 4 common bigrams, and the exact
bigram filter (prefix filtering on the rarest bigrams) kept ~40% of the ids and cost more in
Python than the C++ comparisons it saved. The budget below bounds the total.

The cap. Every lookup charges a `HintBudget` before it works: each rapidfuzz comparison
costs one unit per pair of 64-character blocks (its bit-parallel cost), each difflib ratio
`DIFFLIB_UNITS + len(x) * len(name)` (roughly its cost), each lookup `LOOKUP_UNITS`. The units
depend only on the names, never on time, so a run gives the same hints on any machine. When a
lookup does not fit in what is left, the budget closes: that lookup and every later one give
no hint, and the first of them carries `BUDGET_NOTICE` instead.
"""

from __future__ import annotations

import difflib
import enum
import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

# About two seconds of lookups on one core (a unit measured 35-40 ns): room for 3,000 broken
# links in a vault of 10,000 pages, or 50,000 in one of 1,000 (see bench/hints_bench.py).
HINT_BUDGET: Final = 50_000_000
DIFFLIB_UNITS: Final = 200  # difflib's fixed cost per ratio, in units: ~7 us for short names
LOOKUP_UNITS: Final = 100  # the Python around one lookup (bisection, a call per length)
BUDGET_NOTICE: Final = (
    "hint skipped: too many broken links (the did-you-mean budget of "
    f"{HINT_BUDGET:,} comparisons per run is spent; later findings carry no hint)"
)


class Skipped(enum.Enum):
    """A lookup the budget did not allow."""

    SKIPPED = "skipped"


SKIPPED: Final = Skipped.SKIPPED


@dataclass(slots=True)
class HintBudget:
    """The work did-you-mean lookups may still do in this run, in units (see the module)."""

    units: int = HINT_BUDGET
    closed: bool = False  # a lookup did not fit: none is tried after it
    noticed: bool = False  # the notice was handed out

    def charge(self, units: int) -> bool:
        if self.closed or units > self.units:
            self.closed = True
            return False
        self.units -= units
        return True

    def notice(self) -> str | None:
        """The notice the first time a lookup is skipped, None every later time."""
        if self.noticed:
            return None
        self.noticed = True
        return BUDGET_NOTICE


def least_common(total: int, cutoff: float) -> int:
    """The fewest matched characters M for which difflib's ratio, `2.0 * M / total` in floats,
    reaches `cutoff` (total > 0, cutoff <= 1)."""
    least = max(0, math.ceil(cutoff * total / 2) - 2)
    while least > 0 and 2.0 * (least - 1) / total >= cutoff:
        least -= 1
    while 2.0 * least / total < cutoff:
        least += 1
    return least


def _blocks(length: int) -> int:
    return max(1, -(-length // 64))


Window = tuple[int, int, Mapping[int, int]]  # start, stop, largest distance by length


class NearNames:
    """The names of a lookup set sorted by length, built once per run: the names one lookup
    compares with are a slice of it, found by bisection."""

    __slots__ = ("_blocks", "_lengths", "_names", "_spans", "_windows")

    def __init__(self, names: Iterable[str]) -> None:
        # Duplicates change nothing in get_close_matches' answer.
        self._names = sorted(set(names), key=lambda name: (len(name), name))
        self._lengths: list[int] = []  # the distinct lengths, ascending
        self._spans: list[tuple[int, int]] = []  # where each length's names are in _names
        self._blocks = [0]  # running sum of each name's 64-character blocks, for the budget
        for position, name in enumerate(self._names):
            if not self._lengths or self._lengths[-1] != len(name):
                if self._spans:
                    self._spans[-1] = (self._spans[-1][0], position)
                self._lengths.append(len(name))
                self._spans.append((position, position))
            self._blocks.append(self._blocks[-1] + _blocks(len(name)))
        if self._spans:
            self._spans[-1] = (self._spans[-1][0], len(self._names))
        # A window depends only on the name's length and the cutoff: names share them.
        self._windows: dict[tuple[int, float], Window] = {}

    def __len__(self) -> int:
        return len(self._names)

    def window(self, name: str, cutoff: float) -> Window:
        """The slice of names whose length allows a ratio >= cutoff, and for each such length
        the largest Indel distance (len(x) + len(name) - 2L) that still does."""
        key = (len(name), cutoff)
        if key not in self._windows:
            self._windows[key] = self._window(len(name), cutoff)
        return self._windows[key]

    def _window(self, size: int, cutoff: float) -> Window:
        # Lengths just outside the real-number bounds are tried too: the test below is exact.
        low = math.floor(size * cutoff / (2 - cutoff)) - 1
        first = bisect_left(self._lengths, low)
        if cutoff == 0:
            last = len(self._lengths)
        else:
            last = bisect_right(self._lengths, size * (2 - cutoff) / cutoff + 1)
        most: dict[int, int] = {}
        spans = []
        for length, span in zip(self._lengths[first:last], self._spans[first:last], strict=True):
            total = size + length
            if total == 0:  # both empty: difflib's ratio is 1.0
                most[length] = 0
            elif (least := least_common(total, cutoff)) <= min(size, length):
                most[length] = total - 2 * least
            else:
                continue
            spans.append(span)
        if not spans:
            return 0, 0, most
        return spans[0][0], spans[-1][1], most

    def closest(
        self, name: str, cutoff: float = 0.6, budget: HintBudget | None = None
    ) -> str | Literal[Skipped.SKIPPED] | None:
        """`difflib.get_close_matches(name, names, n=1, cutoff)[0]`, None when it returns
        nothing, SKIPPED when `budget` does not allow the lookup."""
        if not 0.0 <= cutoff <= 1.0:
            raise ValueError(f"cutoff must be in [0.0, 1.0]: {cutoff!r}")
        size = len(name)
        start, stop, most = self.window(name, cutoff)
        if budget is not None:
            scan = _blocks(size) * (self._blocks[stop] - self._blocks[start])
            if not budget.charge(LOOKUP_UNITS + scan):
                return SKIPPED
        candidates: list[tuple[float, str]] = []
        if most:
            # rapidfuzz loads for a lookup, not with every rule module (start-up time of a
            # run whose links all resolve).
            from rapidfuzz import process
            from rapidfuzz.distance import Indel

            # One call over the slice, with the loosest distance of its lengths; each result
            # is then held to its own length's distance.
            for other, distance, _ in process.extract(
                name,
                self._names[start:stop],
                scorer=Indel.distance,
                score_cutoff=max(most.values()),
                limit=None,
            ):
                total = size + len(other)
                if total == 0:
                    candidates.append((1.0, other))
                elif distance <= most.get(len(other), -1):
                    candidates.append((2.0 * ((total - distance) // 2) / total, other))
        candidates.sort(reverse=True)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(name)  # as get_close_matches: autojunk on `name`, the same ratio
        best: tuple[float, str] | None = None
        for bound, other in candidates:
            if best is not None and (bound, other) < best:
                break
            if budget is not None and not budget.charge(DIFFLIB_UNITS + size * len(other)):
                return SKIPPED
            matcher.set_seq1(other)
            ratio = matcher.ratio()
            if ratio >= cutoff and (best is None or (ratio, other) > best):
                best = (ratio, other)
        return None if best is None else best[1]


def closest(name: str, names: Iterable[str], cutoff: float = 0.6) -> str | None:
    """One lookup without a budget: what `difflib.get_close_matches(name, names, n=1,
    cutoff)` returns, or None."""
    found = NearNames(names).closest(name, cutoff)
    return None if found is SKIPPED else found  # without a budget nothing is skipped


def did_you_mean(
    name: str, choices: list[str] | tuple[str, ...], cutoff: float = 0.6
) -> str | None:
    """The hint naming what `difflib.get_close_matches(name, choices, n=1, cutoff)` finds, or
    None (found cheaply, see `closest`)."""
    return suggestion(closest(name, choices, cutoff))


def suggestion(close: str | None) -> str | None:
    return f"did you mean '{close}'?" if close is not None else None
